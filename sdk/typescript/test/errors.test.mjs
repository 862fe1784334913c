// Errors against the real server: a refused request names its field and
// rule, a wrong key is an AuthenticationError, and tenants are isolated
// (another tenant's run or session answers 404 as if it did not exist).
import assert from 'node:assert/strict';
import net from 'node:net';
import { APIError, AuthenticationError, ConnectionError, Crucible, CrucibleError, NotFoundError, ValidationError } from '../dist/index.js';
import { client, env, serverTest } from './lib/server.mjs';

serverTest('a limit out of range is a ValidationError naming the field and the rule', async () => {
  const err = await client()
    .run('print(1)', { limits: { memory_bytes: 1 << 20 } })
    .then(
      () => assert.fail('the run was accepted'),
      (e) => e,
    );
  assert.ok(err instanceof ValidationError);
  assert.ok(err instanceof APIError && err instanceof CrucibleError);
  assert.equal(err.status, 400);
  assert.equal(err.code, 'invalid_request');
  assert.equal(err.field, 'limits.memory_bytes');
  assert.match(err.rule, /must be between 8388608 bytes \(8 MiB\) and/);
  assert.match(err.apiMessage, /limits\.memory_bytes/);
  assert.match(err.message, /400 invalid_request.*\(field limits\.memory_bytes: must be between/);

  const lang = await client().run('x', { language: 'cobol' }).catch((e) => e);
  assert.ok(lang instanceof ValidationError);
  assert.equal(lang.field, 'language');
});

serverTest('a wrong key is an AuthenticationError (401)', async () => {
  const c = new Crucible({ baseUrl: env.url, apiKey: 'crk_not-a-key' });
  const err = await c.run('print(1)').catch((e) => e);
  assert.ok(err instanceof AuthenticationError, String(err));
  assert.equal(err.status, 401);
  assert.equal(err.code, 'unauthorized');
  assert.equal(err.field, 'Authorization');
  await assert.rejects(new Crucible({ baseUrl: env.url, apiKey: '' }).images(), AuthenticationError);
});

serverTest("two tenants are isolated: team-b cannot see team-a's run or session (404)", async () => {
  assert.ok(env.otherKey, 'CRUCIBLE_TEST_OTHER_API_KEY holds team-b key');
  const a = client();
  const b = client({ apiKey: env.otherKey });
  const res = await a.run('open("secret.txt", "w").write("a only")\nprint("team-a")');
  assert.equal(res.status, 'ok');
  const err = await b.getRun(res.id).catch((e) => e);
  assert.ok(err instanceof NotFoundError, String(err));
  assert.equal(err.status, 404);
  assert.equal(err.code, 'not_found');
  await assert.rejects(b.followRun(res.id).next(), NotFoundError);
  await assert.rejects(b.getRun(res.id).then(() => null), NotFoundError);
  const artifact = new URL(`/v1/runs/${res.id}/artifacts/secret.txt`, env.url);
  const raw = await fetch(artifact, { headers: { Authorization: `Bearer ${env.otherKey}` } });
  assert.equal(raw.status, 404);
  assert.ok(!(await b.listRuns({ limit: 500 })).runs.some((r) => r.id === res.id));

  const s = await a.session();
  try {
    await s.files.write('mine.txt', 'team-a');
    const other = b.attachSession(s.id);
    await assert.rejects(other.exec('print(1)'), NotFoundError);
    await assert.rejects(other.files.read('mine.txt'), NotFoundError);
    await assert.rejects(other.files.write('mine.txt', 'team-b'), NotFoundError);
    await assert.rejects(other.close(), NotFoundError);
    assert.equal(await s.files.readText('mine.txt'), 'team-a');
    assert.ok(!(await b.listSessions()).some((x) => x.id === s.id));
  } finally {
    await s.close();
  }
});

serverTest('a bad base URL is refused up front, a server that is not there is a ConnectionError', async () => {
  assert.throws(() => new Crucible({ baseUrl: 'ftp://x' }), /baseUrl: must start with http/);
  assert.throws(() => new Crucible({ baseUrl: 'http://h/?q=1' }), /must not have user info, a query or a fragment/);
  const port = await closedPort();
  const dead = new Crucible({ baseUrl: `http://127.0.0.1:${port}`, retries: 0 });
  await assert.rejects(dead.images(), (err) => err instanceof ConnectionError && /ECONNREFUSED/.test(err.message));
});

/** closedPort returns a loopback port nothing listens on (it was just let go). */
async function closedPort() {
  const srv = net.createServer();
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return port;
}
