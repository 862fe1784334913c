// filesystem.mjs drives sandbox.files of E2B's official SDK (npm e2b,
// pinned) against Crucible's envd services: makeDir, exists, getInfo,
// list, rename and remove (files.write and files.read go through plain
// HTTP, not these services). It is run by the Go test TestEnvdSDK
// (package e2bapi); each check prints "ok <name>", and any failure exits
// non-zero with the reason.
import assert from 'node:assert/strict';
import { Sandbox, InvalidArgumentError, NotFoundError } from 'e2b';

const checks = [];
const check = (name, fn) => checks.push([name, fn]);

check('makeDir, exists, getInfo', async (sbx) => {
  assert.equal(await sbx.files.makeDir('/home/user/d1/d2'), true);
  assert.equal(await sbx.files.makeDir('/home/user/d1/d2'), false, 'a second makeDir answers false');
  assert.equal(await sbx.files.exists('/home/user/d1/d2'), true);
  assert.equal(await sbx.files.exists('/home/user/nope'), false);
  const info = await sbx.files.getInfo('/home/user/d1');
  assert.equal(info.type, 'dir');
  assert.equal(info.name, 'd1');
  assert.equal(info.path, '/home/user/d1');
  assert.ok(info.modifiedTime instanceof Date && !isNaN(info.modifiedTime), `modifiedTime ${info.modifiedTime}`);
});

check('list', async (sbx) => {
  await sbx.commands.run('printf abc > d1/f.txt');
  const entries = await sbx.files.list('/home/user/d1');
  assert.deepEqual(entries.map((e) => [e.name, e.type, e.path]), [
    ['d2', 'dir', '/home/user/d1/d2'],
    ['f.txt', 'file', '/home/user/d1/f.txt'],
  ]);
  assert.equal(entries[1].size, 3);
  const deep = await sbx.files.list('d1', { depth: 2 });
  assert.equal(deep.length, 2);
});

check('rename', async (sbx) => {
  const entry = await sbx.files.rename('/home/user/d1/f.txt', '/home/user/d1/g.txt');
  assert.equal(entry.name, 'g.txt');
  assert.equal(entry.path, '/home/user/d1/g.txt');
  assert.equal(await sbx.files.exists('/home/user/d1/f.txt'), false);
  const err = await sbx.files.rename('/home/user/d1/f.txt', '/home/user/x').then(() => null, (e) => e);
  assert.ok(err instanceof NotFoundError, `want NotFoundError, got ${err}`);
});

check('remove, recursively', async (sbx) => {
  await sbx.files.remove('/home/user/d1');
  assert.equal(await sbx.files.exists('/home/user/d1'), false);
  assert.equal(await sbx.files.exists('/home/user/d1/g.txt'), false);
});

check('a path outside /home/user is refused', async (sbx) => {
  for (const op of [() => sbx.files.list('/etc'), () => sbx.files.makeDir('/tmp/x'), () => sbx.files.remove('/home/user/../../etc/passwd')]) {
    const err = await op().then(() => null, (e) => e);
    assert.ok(err instanceof InvalidArgumentError, `want InvalidArgumentError, got ${err}`);
    assert.match(err.message, /path: must be under \/home\/user/);
  }
});

check('watchDir is refused, saying why', async (sbx) => {
  const err = await sbx.files.watchDir('/home/user', () => {}).then(() => null, (e) => e);
  assert.ok(err, 'watchDir did not fail');
  assert.match(err.message, /WatchDir is not supported by Crucible's envd: a session's files are listed on request, not watched/);
});

const sbx = await Sandbox.create();
let failed = 0;
try {
  for (const [name, fn] of checks) {
    try {
      await fn(sbx);
      console.log(`ok ${name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
    }
  }
} finally {
  await sbx.kill();
}
process.exit(failed ? 1 : 0);
