// Runs against the real server: the result's fields, an error with its
// hint, artifacts' bytes, a chart as PNG, the metrics, records and lists.
import assert from 'node:assert/strict';
import { client, isPNG, serverTest } from './lib/server.mjs';

serverTest('run: stdout, exit code, status and metrics', async () => {
  const c = client();
  const res = await c.run('import sys\nprint(6*7)\nprint("warn", file=sys.stderr)');
  assert.equal(res.status, 'ok');
  assert.equal(res.ok, true);
  assert.equal(res.exitCode, 0);
  assert.equal(res.stdout, '42\n');
  assert.equal(res.stderr, 'warn\n');
  assert.deepEqual([...res.stdoutBytes], [...new TextEncoder().encode('42\n')]);
  assert.equal(res.language, 'python');
  assert.match(res.id, /^[0-9a-f]{16,}$/);
  for (const k of ['wall_ms', 'cpu_ms', 'peak_memory_bytes', 'queue_ms', 'start_ms']) assert.equal(typeof res.metrics[k], 'number', k);
  assert.ok(res.metrics.wall_ms > 0);
  assert.ok(res.limits.memory_bytes > 0);

  const failed = await c.run('exit(3)', { language: 'py' });
  assert.equal(failed.status, 'error');
  assert.equal(failed.exitCode, 3);
});

serverTest('run: an error carries its type, line and the server hint', async () => {
  const res = await client().run('print("before")\nimport matplotlib', { image: 'host' });
  assert.equal(res.status, 'error');
  assert.equal(res.stdout, 'before\n');
  assert.equal(res.error?.type, 'ModuleNotFoundError');
  assert.equal(res.error?.line, 2);
  assert.match(res.error?.hint ?? '', /matplotlib.*not installed/);
  assert.match(res.error?.hint ?? '', /datascience/);
});

serverTest('run: artifacts come with bytes, inline and downloaded from the record', async () => {
  const c = client();
  const res = await c.run('open("out.txt", "w").write("hello artifact")\nopen("raw.bin", "wb").write(bytes(range(256)))');
  assert.equal(res.status, 'ok');
  const names = res.artifacts.map((a) => a.name).sort();
  assert.deepEqual(names, ['out.txt', 'raw.bin']);
  const txt = res.artifacts.find((a) => a.name === 'out.txt');
  assert.equal(await txt.text(), 'hello artifact');
  assert.equal(txt.size, 14);
  const bin = res.artifacts.find((a) => a.name === 'raw.bin');
  assert.deepEqual([...(await bin.bytes())], [...Array(256).keys()]);

  // The record keeps no content: bytes() downloads it (GET /v1/runs/{id}/artifacts/{name}).
  const rec = await c.getRun(res.id);
  const recBin = rec.artifacts.find((a) => a.name === 'raw.bin');
  assert.equal(recBin.sha256, bin.sha256);
  assert.deepEqual([...(await recBin.bytes())], [...Array(256).keys()]);
});

serverTest('run: a matplotlib chart comes as PNG bytes', async () => {
  const res = await client().run('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("t")\nplt.show()', { image: 'datascience' });
  assert.equal(res.status, 'ok', res.stderr);
  assert.equal(res.charts.length, 1);
  const png = await res.charts[0].bytes();
  assert.ok(isPNG(png), 'the chart is a PNG');
  assert.equal(png.length, res.charts[0].size);
});

serverTest('getRun, listRuns and images', async () => {
  const c = client();
  const marker = `listed-${Date.now()}`;
  const res = await c.run(`print("${marker}")`, { files: [{ name: 'in.bin', content: new Uint8Array([0xff, 0]) }], stdin: 'x' });
  assert.equal(res.status, 'ok');
  const rec = await c.getRun(res.id);
  assert.equal(rec.id, res.id);
  assert.equal(rec.stdout, `${marker}\n`);
  assert.equal(rec.raw.code, `print("${marker}")`);
  const page = await c.listRuns({ limit: 5, status: 'ok' });
  assert.ok(page.runs.some((r) => r.id === res.id));
  assert.ok(page.runs.every((r) => r.status === 'ok'));
  const images = await c.images();
  assert.ok(images.images.some((i) => i.name === 'host'));
  assert.equal(images.session_default, 'datascience');
});

serverTest('runAsync, followRun and artifact', async () => {
  const c = client();
  const id = await c.runAsync('import time\ntime.sleep(0.2)\nopen("a.txt", "w").write("async")\nprint("done")');
  assert.match(id, /^[0-9a-f]{16,}$/);
  const events = [];
  for await (const ev of c.followRun(id)) events.push(ev);
  assert.deepEqual(events.map((e) => e.type), ['run', 'stdout', 'result']);
  assert.equal(events[1].text, 'done\n');
  assert.equal(events[2].result.id, id);
  assert.equal(new TextDecoder().decode(await c.artifact(id, 'a.txt')), 'async');
});
