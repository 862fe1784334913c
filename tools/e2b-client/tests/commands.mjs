// commands.mjs drives sandbox.commands of E2B's official SDK (npm e2b,
// pinned) against Crucible's envd services. It is run by the Go test
// TestEnvdSDK (package e2bapi), which sets E2B_API_URL, E2B_SANDBOX_URL
// and E2B_API_KEY to a server it started; each check prints "ok <name>",
// and any failure exits non-zero with the reason.
import assert from 'node:assert/strict';
import { Sandbox, CommandExitError, TimeoutError } from 'e2b';

const checks = [];
const check = (name, fn) => checks.push([name, fn]);

check('exit code, stdout and stderr', async (sbx) => {
  const err = await sbx.commands.run('echo hi; echo err >&2; exit 3').then(() => null, (e) => e);
  assert.ok(err instanceof CommandExitError, `want CommandExitError, got ${err}`);
  assert.equal(err.exitCode, 3);
  assert.equal(err.stdout, 'hi\n');
  assert.equal(err.stderr, 'err\n');
  assert.match(err.message, /exit status 3/);
  const ok = await sbx.commands.run('echo fine');
  assert.equal(ok.exitCode, 0);
  assert.equal(ok.stdout, 'fine\n');
});

check('onStdout receives output before the command ends', async (sbx) => {
  const chunks = [];
  const started = Date.now();
  const res = await sbx.commands.run('echo first; sleep 1.5; echo second', {
    onStdout: (d) => chunks.push([d, Date.now() - started]),
  });
  const ended = Date.now() - started;
  assert.equal(res.stdout, 'first\nsecond\n');
  assert.equal(chunks[0][0], 'first\n');
  assert.ok(ended - chunks[0][1] >= 1000, `first chunk at ${chunks[0][1]} ms, end at ${ended} ms: not streamed`);
});

check('envs, the sandbox environment and cwd', async (sbx) => {
  const res = await sbx.commands.run('echo "$A $SANDBOX_VAR"; pwd -P', { envs: { A: 'from-run' }, cwd: '/tmp' });
  assert.equal(res.stdout, 'from-run from-sandbox\n/tmp\n');
  const home = await sbx.commands.run('pwd -P');
  assert.equal(home.stdout, '/work\n');
});

check('a background command is listed, killed and ends fast', async (sbx) => {
  const handle = await sbx.commands.run('sleep 30', { background: true });
  assert.equal(typeof handle.pid, 'number');
  let listed = [];
  for (let i = 0; i < 100 && !listed.some((p) => p.pid === handle.pid); i++) {
    listed = await sbx.commands.list();
    await new Promise((r) => setTimeout(r, 50));
  }
  const p = listed.find((x) => x.pid === handle.pid);
  assert.ok(p, `pid ${handle.pid} not in ${JSON.stringify(listed)}`);
  assert.equal(p.cmd, '/bin/bash');
  assert.deepEqual(p.args, ['-l', '-c', 'sleep 30']);
  await new Promise((r) => setTimeout(r, 300));
  const t0 = Date.now();
  assert.equal(await handle.kill(), true);
  const err = await handle.wait().then(() => null, (e) => e);
  const took = Date.now() - t0;
  assert.ok(err instanceof CommandExitError, `want CommandExitError, got ${err}`);
  assert.equal(err.exitCode, -1);
  assert.match(err.error, /killed/);
  assert.ok(took < 5000, `the kill took ${took} ms`);
  assert.deepEqual(await sbx.commands.list(), []);
  assert.equal(await sbx.commands.kill(handle.pid), false, 'killing an ended command answers false');
});

check('connect re-attaches to a running command', async (sbx) => {
  const handle = await sbx.commands.run('sleep 1; echo done', { background: true });
  await handle.disconnect();
  const again = await sbx.commands.connect(handle.pid);
  const res = await again.wait();
  assert.equal(res.stdout, 'done\n');
});

check('a timeout ends the command', async (sbx) => {
  const t0 = Date.now();
  const err = await sbx.commands.run('sleep 20', { timeoutMs: 1000 }).then(() => null, (e) => e);
  const took = Date.now() - t0;
  assert.ok(err instanceof TimeoutError, `want TimeoutError, got ${err}`);
  assert.ok(took < 5000, `the timeout took ${took} ms`);
  const after = await sbx.commands.run('cat /proc/[0-9]*/comm 2>/dev/null | grep -c "^sleep$" || true');
  assert.equal(after.stdout, '0\n', 'the timed-out command left a sleep behind');
});

// The sandbox's own environment (E2B's envVars), which every command gets.
const sbx = await Sandbox.create({ envs: { SANDBOX_VAR: 'from-sandbox' } });
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
