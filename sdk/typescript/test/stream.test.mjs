// Streamed runs resumed after the test cuts the connection: a TCP proxy of
// the test's own sits between the SDK and the server. The output must
// arrive once and in order, as client/stream.go guarantees.
import assert from 'node:assert/strict';
import { Proxy } from './lib/proxy.mjs';
import { client, env, serverTest } from './lib/server.mjs';

/** collect reads a streamRun to its end, calling onOutput after each output event. */
async function collect(events, onOutput = () => {}) {
  const out = { stdout: '', stderr: '', order: [], result: undefined, runIds: [] };
  for await (const ev of events) {
    if (ev.type === 'run') out.runIds.push(ev.id);
    else if (ev.type === 'result') out.result = ev.result;
    else {
      out[ev.type] += ev.text;
      out.order.push(ev.type);
      await onOutput(ev, out);
    }
  }
  return out;
}

serverTest('streamRun resumes with Last-Event-ID after the connection is cut mid-stream', async (t) => {
  const proxy = new Proxy(env.url);
  t.after(() => proxy.close());
  const c = client({ baseUrl: await proxy.start() });
  const code = 'import time\nfor i in range(40):\n    print(f"line {i}", flush=True)\n    time.sleep(0.03)';
  let cuts = 0;
  const out = await collect(c.streamRun(code), (ev, acc) => {
    // Cut twice: after the 3rd line and after the 20th, while the run goes on.
    const lines = acc.stdout.split('\n').length - 1;
    if ((cuts === 0 && lines >= 3) || (cuts === 1 && lines >= 20)) {
      cuts++;
      proxy.cutAll();
    }
  });
  assert.equal(cuts, 2);
  const want = Array.from({ length: 40 }, (_, i) => `line ${i}\n`).join('');
  assert.equal(out.stdout, want, 'each line once, in order');
  assert.equal(out.result.status, 'ok');
  assert.equal(out.result.stdout, want);
  assert.deepEqual(out.runIds, [out.result.id], 'one run event');
  // The run was started once; its events were asked for three times, twice resuming after an id.
  assert.equal(proxy.count('POST', '/v1/runs'), 1);
  const follows = proxy.requests.filter((r) => r.path === `/v1/runs/${out.result.id}/events`);
  assert.equal(follows.length, 3);
  assert.equal(follows[0].headers['last-event-id'], undefined);
  assert.match(follows[1].headers['last-event-id'], /^\d+$/);
  assert.ok(Number(follows[2].headers['last-event-id']) > Number(follows[1].headers['last-event-id']));
});

serverTest('streamRun resumed after the run ended passes the missing output from the result, once', async (t) => {
  // Output on both streams: once the run has ended the server no longer
  // knows their interleaving and resumes with the result alone; the SDK
  // passes on from it what the events had not brought.
  const proxy = new Proxy(env.url);
  t.after(() => proxy.close());
  const c = client({ baseUrl: await proxy.start() });
  const code = 'import sys, time\nfor i in range(10):\n    print(f"out {i}", flush=True)\n    print(f"err {i}", file=sys.stderr, flush=True)\n    time.sleep(0.02)';
  let cut = false;
  const out = await collect(c.streamRun(code), (ev) => {
    if (!cut && ev.type === 'stdout') {
      cut = true;
      // Refuse reconnections until the run has surely ended: the first
      // resumption fails at once, the second comes after the server's
      // retry: (1 s), when the proxy lets it through.
      proxy.refuse = true;
      proxy.cutAll();
      setTimeout(() => (proxy.refuse = false), 700);
    }
  });
  assert.ok(cut);
  assert.equal(out.result.status, 'ok');
  assert.equal(out.stdout, Array.from({ length: 10 }, (_, i) => `out ${i}\n`).join(''));
  assert.equal(out.stderr, Array.from({ length: 10 }, (_, i) => `err ${i}\n`).join(''));
  const resumed = proxy.requests.filter((r) => r.headers['last-event-id']);
  assert.ok(resumed.length >= 1, 'resumed with Last-Event-ID');
});

serverTest('a stream that cannot be resumed fails after 3 reconnections without progress', async (t) => {
  const proxy = new Proxy(env.url);
  t.after(() => proxy.close());
  const c = client({ baseUrl: await proxy.start() });
  const events = c.streamRun('import time\nprint("a", flush=True)\ntime.sleep(3)\nprint("b")');
  const seen = [];
  await assert.rejects(
    (async () => {
      for await (const ev of events) {
        seen.push(ev.type);
        if (ev.type === 'stdout') {
          proxy.refuse = true;
          proxy.cutAll();
        }
      }
    })(),
    (err) => err.name === 'ConnectionError',
  );
  assert.deepEqual(seen, ['run', 'stdout']);
  assert.equal(proxy.refused, 3, 'three reconnections in a row without an event, then the error');
  const follows = proxy.requests.filter((r) => r.path.endsWith('/events'));
  assert.equal(follows.length, 1, 'the refused reconnections never reached the server');
});

serverTest('followRun replays an ended run from its record', async () => {
  const c = client();
  const events = c.streamRun('print("x" * 3)');
  const out = await collect(events);
  assert.equal(out.stdout, 'xxx\n');
  // Replayed from the record once the run ended.
  const again = await collect(c.followRun(out.result.id));
  assert.equal(again.stdout, 'xxx\n');
  assert.equal(again.result.id, out.result.id);
});
