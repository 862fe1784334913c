// Retries never repeat a request that is not idempotent: a POST whose
// connection drops after it was sent is not sent again (the server ran it
// once), while a GET is. Timeouts and cancellation.
import assert from 'node:assert/strict';
import { ConnectionError, ConnectionTimeoutError, RateLimitError, ServerError } from '../dist/index.js';
import { Proxy } from './lib/proxy.mjs';
import { client, env, serverTest } from './lib/server.mjs';

serverTest('a POST whose connection drops after it was sent is never sent again', async (t) => {
  const proxy = new Proxy(env.url);
  t.after(() => proxy.close());
  proxy.swallow = (req) => req.method === 'POST';
  const c = client({ baseUrl: await proxy.start(), retries: 5 });
  const marker = `once-${Date.now()}-${Math.random()}`;
  const err = await c.run(`print("${marker}")`).catch((e) => e);
  assert.ok(err instanceof ConnectionError, String(err));
  assert.equal(proxy.count('POST', '/v1/runs'), 1, 'the POST was sent once');
  // The server did run it, once: a second send would have run it twice.
  const { runs } = await client().listRuns({ limit: 50 });
  assert.equal(runs.filter((r) => r.stdout === `${marker}\n`).length, 1);

  // The same for a session's cell: a variable incremented once.
  proxy.swallow = null;
  const s = await c.session();
  t.after(() => client().attachSession(s.id).close());
  await s.exec('n = 0');
  proxy.swallow = (req) => req.method === 'POST' && req.path.endsWith('/exec');
  await assert.rejects(s.exec('n += 1'), ConnectionError);
  proxy.swallow = null;
  assert.equal((await client().attachSession(s.id).exec('n')).value, '1');
  assert.equal(proxy.requests.filter((r) => r.path.endsWith('/exec')).length, 2);
});

serverTest('a GET whose connection drops is sent again, up to retries times', async (t) => {
  const proxy = new Proxy(env.url);
  t.after(() => proxy.close());
  let dropped = 0;
  proxy.swallow = (req) => req.path === '/v1/images' && dropped++ < 2;
  const c = client({ baseUrl: await proxy.start(), retries: 2 });
  const images = await c.images();
  assert.ok(images.images.length > 0);
  assert.equal(proxy.count('GET', '/v1/images'), 3);

  dropped = 0;
  const none = client({ baseUrl: proxy.server.address() && `http://127.0.0.1:${proxy.server.address().port}`, retries: 1 });
  await assert.rejects(none.images(), ConnectionError, 'retries: 1 is not enough for two drops');
  assert.equal(proxy.count('GET', '/v1/images'), 5);
});

serverTest('503 and 429 with Retry-After: a GET is retried, a POST is not', async () => {
  // The server answers 503 and 429 only under load; this fetch answers
  // them itself for the first calls, then passes on to the real server.
  const calls = [];
  let busy = 0;
  const busyFetch = async (url, init) => {
    calls.push(`${init.method} ${new URL(url).pathname}`);
    if (busy > 0) {
      busy--;
      const status = busy % 2 ? 503 : 429;
      return new Response(JSON.stringify({ error: { code: status === 503 ? 'unavailable' : 'too_many_requests', message: 'busy' } }), {
        status,
        headers: { 'Content-Type': 'application/json', 'Retry-After': '0' },
      });
    }
    return fetch(url, init);
  };
  const c = client({ fetch: busyFetch, retries: 3 });
  busy = 2;
  const images = await c.images();
  assert.ok(images.images.length > 0);
  assert.deepEqual(calls, ['GET /v1/images', 'GET /v1/images', 'GET /v1/images']);

  calls.length = 0;
  busy = 1;
  const err = await c.run('print(1)').catch((e) => e);
  assert.ok(err instanceof RateLimitError, String(err));
  assert.equal(err.retryAfterMs, 0);
  assert.deepEqual(calls, ['POST /v1/runs']);

  calls.length = 0;
  busy = 2;
  await assert.rejects(c.run('print(1)'), ServerError);
  assert.deepEqual(calls, ['POST /v1/runs']);
});

serverTest('timeoutMs bounds the wait for an answer; a signal cancels', async () => {
  const c = client({ timeoutMs: 300 });
  const started = Date.now();
  const err = await c.run('import time\ntime.sleep(3)').catch((e) => e);
  assert.ok(err instanceof ConnectionTimeoutError, String(err));
  assert.match(err.message, /POST \/v1\/runs: no answer within 300 ms/);
  assert.ok(Date.now() - started < 2500);

  // A stream's timeout covers its first byte only: a run longer than it streams to its end.
  let result;
  for await (const ev of c.streamRun('import time\nfor i in range(4):\n    print(i, flush=True)\n    time.sleep(0.2)')) if (ev.type === 'result') result = ev.result;
  assert.equal(result.stdout, '0\n1\n2\n3\n');

  const ctl = new AbortController();
  setTimeout(() => ctl.abort(), 200);
  await assert.rejects(client().run('import time\ntime.sleep(3)', { signal: ctl.signal }), { name: 'AbortError' });
});
