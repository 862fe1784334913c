// How answers that are not the API's are reported (a proxy's page, a
// body that is not JSON), table-driven over a fetch that answers them
// (no server needed: the real server's errors are in errors.test.mjs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { APIError, ConnectionError, Crucible, CrucibleError, ServerError, ValidationError } from '../dist/index.js';

const cases = [
  {
    name: "a proxy's 502 page is a ServerError with the page's start as message and no code",
    answer: () => new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' }),
    check: (err) => err instanceof ServerError && err.status === 502 && err.code === '' && err.apiMessage === '<html>bad gateway</html>',
  },
  {
    name: 'an empty error body gives the status text',
    answer: () => new Response('', { status: 400, statusText: 'Bad Request' }),
    check: (err) => err instanceof ValidationError && err.apiMessage === 'Bad Request' && err.field === '',
  },
  {
    name: 'a long page is clipped',
    answer: () => new Response('x'.repeat(10_000), { status: 500 }),
    check: (err) => err instanceof APIError && err.apiMessage.length === 513 && err.apiMessage.endsWith('…'),
  },
  {
    name: 'a 200 that is not JSON is a CrucibleError saying so, not a ConnectionError',
    answer: () => new Response('<html>login</html>', { status: 200 }),
    check: (err) => err instanceof CrucibleError && !(err instanceof ConnectionError) && /POST \/v1\/runs: decode answer/.test(err.message),
  },
  {
    name: 'fetch failing is a ConnectionError naming the request and the cause',
    answer: () => {
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNRESET') });
    },
    check: (err) => err instanceof ConnectionError && err.message === 'crucible: POST /v1/runs: fetch failed: connect ECONNRESET',
  },
];

for (const c of cases) {
  test(`transport: ${c.name}`, async () => {
    let calls = 0;
    const crucible = new Crucible({ baseUrl: 'http://crucible.invalid', apiKey: 'k', fetch: async () => (calls++, c.answer()) });
    const err = await crucible.run('print(1)').catch((e) => e);
    assert.ok(c.check(err), String(err));
    assert.equal(calls, 1, 'a POST is sent once');
  });
}

test('transport: the API key goes as a Bearer token, JSON as application/json, the base path is kept', async () => {
  let seen;
  const crucible = new Crucible({
    baseUrl: 'https://example.invalid/crucible/',
    apiKey: 'crk_x',
    fetch: async (url, init) => {
      seen = { url, init };
      return new Response('{"default":"host","session_default":"host","images":[]}', { status: 200 });
    },
  });
  await crucible.images();
  assert.equal(seen.url, 'https://example.invalid/crucible/v1/images');
  assert.equal(seen.init.headers.Authorization, 'Bearer crk_x');
  await crucible.run('print(1)', { cache: true }).catch(() => {});
  assert.equal(seen.url, 'https://example.invalid/crucible/v1/runs?cache=1');
  assert.equal(seen.init.headers['Content-Type'], 'application/json');
  assert.deepEqual(JSON.parse(seen.init.body), { code: 'print(1)' });
});
