// Sessions against the real server: files written, listed and read, cells
// using them, variables persisting, and the session closed by close() or
// at the end of an `await using` block.
import assert from 'node:assert/strict';
import { SessionClosedError } from '../dist/index.js';
import { execInUsingBlock, throwInUsingBlock } from './.build/dispose.js';
import { client, isPNG, serverTest } from './lib/server.mjs';

serverTest('session: files, exec using them, variables persist, close', async () => {
  const c = client();
  const s = await c.session();
  try {
    assert.match(s.id, /^ses_/);
    assert.equal((await s.info()).image, 'datascience');
    await s.files.write('data/nums.csv', 'n\n1\n2\n3\n');
    await s.files.write('blob.bin', new Uint8Array([0, 255, 7]));
    const files = await s.files.list();
    const byName = Object.fromEntries(files.map((f) => [f.name, f]));
    assert.equal(byName['data'].dir, true);
    assert.equal(byName['data/nums.csv'].size, 8);
    assert.equal(byName['blob.bin'].size, 3);
    assert.deepEqual([...(await s.files.read('blob.bin'))], [0, 255, 7]);

    const first = await s.exec('import pandas as pd\ndf = pd.read_csv("data/nums.csv")\ntotal = int(df["n"].sum())\nprint("rows", len(df))\ntotal');
    assert.equal(first.status, 'ok', first.stderr);
    assert.equal(first.stdout, 'rows 3\n');
    assert.equal(first.value, '6');

    const second = await s.exec('open("result.txt", "w").write(str(total * 7))\ntotal * 7');
    assert.equal(second.value, '42', 'total persisted from the previous cell');
    assert.equal(await s.files.readText('result.txt'), '42');

    const chart = await s.exec('import matplotlib.pyplot as plt\nplt.plot(df["n"])\nplt.show()');
    assert.equal(chart.charts.length, 1);
    assert.ok(isPNG(await chart.charts[0].bytes()));

    const failed = await s.exec('1/0');
    assert.equal(failed.status, 'error');
    assert.equal(failed.error?.type, 'ZeroDivisionError');
    assert.equal((await s.exec('total')).value, '6', 'an error keeps the variables');

    const streamed = [];
    let result;
    for await (const ev of s.execStream('for i in range(3): print(i)')) {
      if (ev.type === 'stdout') streamed.push(ev.text);
      if (ev.type === 'result') result = ev.result;
    }
    assert.equal(streamed.join(''), '0\n1\n2\n');
    assert.equal(result.stdout, '0\n1\n2\n');
  } finally {
    await s.close();
  }
  await assert.rejects(c.attachSession(s.id).exec('1'), (err) => err instanceof SessionClosedError && err.status === 410 && err.code === 'session_closed');
  await s.close(); // a second close does nothing
  await c.attachSession(s.id).close(); // nor does closing, by another handle, a session closed already
});

serverTest('session: `await using` closes the session at the end of the block, also when it throws', async () => {
  const c = client();
  const { id, value } = await execInUsingBlock(c, 'x = 20\nx + 22');
  assert.equal(value, '42');
  await assert.rejects(c.attachSession(id).info(), SessionClosedError);

  let opened = '';
  await assert.rejects(
    throwInUsingBlock(c, (sid) => (opened = sid)),
    /thrown inside the block/,
  );
  assert.match(opened, /^ses_/);
  await assert.rejects(c.attachSession(opened).info(), SessionClosedError);
  assert.ok(!(await c.listSessions()).some((s) => s.id === id || s.id === opened));
});

serverTest('session: breaking out of execStream closes the stream, and the server interrupts the cell', async () => {
  const s = await client().session();
  try {
    await s.exec('x = 1');
    const started = Date.now();
    for await (const ev of s.execStream('import time\nprint("started", flush=True)\ntime.sleep(20)\nx = 2')) if (ev.type === 'stdout') break;
    const next = await s.exec('x');
    assert.equal(next.value, '1', 'the interrupted cell did not finish');
    assert.ok(Date.now() - started < 10_000, `the next cell waited ${Date.now() - started} ms`);
  } finally {
    await s.close();
  }
});
