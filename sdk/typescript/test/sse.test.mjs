// The Server-Sent Events reader and the wire helpers, table-driven, on
// bytes fed whole and one byte at a time (no server needed).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromBase64, toBase64, toBytes, toText } from '../dist/data.js';
import { parseRetryAfter, statusOfCode } from '../dist/errors.js';
import { SSEReader } from '../dist/sse.js';

/** streamOf returns a ReadableStream of text's UTF-8 bytes in chunks of size (whole when 0). */
function streamOf(text, size) {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(ctl) {
      if (size === 0) ctl.enqueue(bytes);
      else for (let i = 0; i < bytes.length; i += size) ctl.enqueue(bytes.subarray(i, i + size));
      ctl.close();
    },
  });
}

const cases = [
  {
    name: "the server's stream: retry, ids, named events",
    input: 'retry: 1000\n\nid: 1\nevent: run\ndata: {"id":"r1"}\n\nid: 3\nevent: stdout\ndata: "é\\n"\n\n',
    events: [
      { name: 'run', data: '{"id":"r1"}' },
      { name: 'stdout', data: '"é\\n"' },
    ],
    id: '3',
    retryMs: 1000,
  },
  {
    name: 'comments (keep-alives) and CRLF line ends',
    input: ': keep-alive\r\n\r\nid: 7\r\nevent: result\r\ndata: {}\r\n\r\n',
    events: [{ name: 'result', data: '{}' }],
    id: '7',
    retryMs: 0,
  },
  {
    name: 'data on several lines is joined by newlines; no name is "message"',
    input: 'data: a\ndata:b\ndata:  c\n\n',
    events: [{ name: 'message', data: 'a\nb\n c' }],
    id: '',
    retryMs: 0,
  },
  {
    name: 'an event cut before its blank line is dropped, its id kept',
    input: 'id: 4\nevent: stdout\ndata: "x"\n\nid: 5\nevent: stdout\ndata: "y"\n',
    events: [{ name: 'stdout', data: '"x"' }],
    id: '5',
    retryMs: 0,
  },
  {
    name: 'an id holding NUL is ignored; a bad retry too',
    input: 'id: 2\n\nid: 3\0\nretry: soon\nevent: e\ndata: 1\n\n',
    events: [{ name: 'e', data: '1' }],
    id: '2',
    retryMs: 0,
  },
];

for (const c of cases) {
  for (const size of [0, 1, 3]) {
    test(`SSEReader: ${c.name} (chunks of ${size || 'all'})`, async () => {
      const sr = new SSEReader();
      const got = [];
      for await (const ev of sr.read(streamOf(c.input, size))) got.push(ev);
      assert.deepEqual(got, c.events);
      assert.equal(sr.id, c.id);
      assert.equal(sr.retryMs, c.retryMs);
      assert.equal(sr.failed, false);
    });
  }
}

test('SSEReader: a failing body is marked failed; the last id is carried over', async () => {
  let n = 0;
  const body = new ReadableStream({
    pull(ctl) {
      if (n++ === 0) ctl.enqueue(new TextEncoder().encode('id: 9\nevent: stdout\ndata: "a"\n\n'));
      else ctl.error(new TypeError('terminated'));
    },
  });
  const sr = new SSEReader('8');
  assert.equal(sr.id, '8');
  const got = [];
  await assert.rejects(async () => {
    for await (const ev of sr.read(body)) got.push(ev.data);
  }, /terminated/);
  assert.deepEqual(got, ['"a"']);
  assert.equal(sr.id, '9');
  assert.equal(sr.failed, true);
});

test('Data: text, base64 and null', () => {
  const table = [
    { data: 'héllo', bytes: [104, 195, 169, 108, 108, 111], text: 'héllo' },
    { data: { base64: '/wA=' }, bytes: [255, 0], text: '\ufffd\0' },
    { data: null, bytes: [], text: '' },
    { data: undefined, bytes: [], text: '' },
  ];
  for (const c of table) {
    assert.deepEqual([...toBytes(c.data)], c.bytes);
    assert.equal(toText(c.data), c.text);
  }
  const big = new Uint8Array(100_000).map((_, i) => i % 251);
  assert.deepEqual(fromBase64(toBase64(big)), big);
});

test('Retry-After and the status of error codes', () => {
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter('3'), 3000);
  assert.equal(parseRetryAfter('0'), 0);
  assert.equal(parseRetryAfter('soon'), undefined);
  const inTwo = parseRetryAfter(new Date(Date.now() + 2000).toUTCString());
  assert.ok(inTwo > 0 && inTwo <= 2000, String(inTwo));
  assert.equal(parseRetryAfter(new Date(Date.now() - 5000).toUTCString()), 0);
  const table = { invalid_request: 400, unauthorized: 401, withheld: 403, not_found: 404, session_closed: 410, too_many_requests: 429, not_configured: 501, unavailable: 503, what: 500 };
  for (const [code, status] of Object.entries(table)) assert.equal(statusOfCode(code), status, code);
});
