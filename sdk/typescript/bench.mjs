// The SDK's overhead over raw HTTP: times N runs of print(1) through the
// SDK and N through fetch, interleaved (alternating which goes first),
// against the server of CRUCIBLE_URL with CRUCIBLE_API_KEY, after a
// warm-up, and prints a line starting "sdk-bench:" with the medians,
// their difference and ratio, and the median of the paired differences
// (steadier on a shared machine). Target: the SDK adds <= 0.5 ms. A
// second line times the same against a loopback server of this script
// that answers a recorded result at once: the SDK's own cost, without
// the sandbox's noise.
//
//   npm run build && CRUCIBLE_URL=... CRUCIBLE_API_KEY=... node sdk/typescript/bench.mjs [N]
import http from 'node:http';
import { Crucible } from './dist/index.js';

const url = process.env.CRUCIBLE_URL;
if (!url) {
  console.error('bench.mjs: set CRUCIBLE_URL (and CRUCIBLE_API_KEY) to a running crucible serve');
  process.exit(2);
}
const key = process.env.CRUCIBLE_API_KEY ?? '';
const n = Number(process.argv[2] ?? 200);
const warmup = 20;
const code = 'print(1)';

/** bench times n interleaved runs through the SDK and through fetch against base, and returns the sdk-bench: line. */
async function bench(label, base) {
  const crucible = new Crucible({ baseUrl: base, apiKey: key });
  const headers = { 'Content-Type': 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) };
  const viaSDK = async () => {
    const res = await crucible.run(code);
    if (res.stdout !== '1\n') throw new Error(`sdk: unexpected result ${res.status} ${JSON.stringify(res.stdout)}`);
  };
  const viaFetch = async () => {
    const resp = await fetch(`${base}/v1/runs`, { method: 'POST', headers, body: JSON.stringify({ code }) });
    const res = await resp.json();
    if (resp.status !== 200 || res.stdout !== '1\n') throw new Error(`fetch: unexpected answer ${resp.status} ${JSON.stringify(res)}`);
  };
  for (let i = 0; i < warmup; i++) {
    await viaSDK();
    await viaFetch();
  }
  const sdk = [];
  const raw = [];
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) {
      sdk.push(await time(viaSDK));
      raw.push(await time(viaFetch));
    } else {
      raw.push(await time(viaFetch));
      sdk.push(await time(viaSDK));
    }
  }
  const ms = median(sdk);
  const mr = median(raw);
  const paired = median(sdk.map((x, i) => x - raw[i]));
  return (
    `sdk-bench: typescript ${label} n=${n} sdk_median_ms=${ms.toFixed(3)} fetch_median_ms=${mr.toFixed(3)} diff_ms=${(ms - mr).toFixed(3)} ` +
    `ratio=${(ms / mr).toFixed(3)} paired_diff_median_ms=${paired.toFixed(3)} target_diff_ms<=0.5 ${ms - mr <= 0.5 ? 'ok' : 'OVER'}`
  );
}

async function time(fn) {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

console.log(await bench('server', url));

// The same against a loopback server answering, at once, a result the
// real server gave: what remains is the SDK's cost over fetch.
const recorded = JSON.stringify(await new Crucible({ baseUrl: url, apiKey: key }).run(code).then((r) => r.raw));
const canned = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/json' }).end(recorded));
});
await new Promise((resolve) => canned.listen(0, '127.0.0.1', resolve));
console.log(await bench('recorded-answer', `http://127.0.0.1:${canned.address().port}`));
canned.close();
