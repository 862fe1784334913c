// Reading the API's event streams, resuming a dropped connection by event
// id exactly as client/stream.go does: Last-Event-ID, at most maxResumes
// reconnections in a row without an event, and each byte of output passed
// on once.

import { toBytes, type Data } from './data.js';
import { APIError, ConnectionError, CrucibleError, makeAPIError, statusOfCode, type ErrorCode } from './errors.js';
import type { Req, Transport } from './http.js';
import { SSEReader } from './sse.js';

/** maxResumes bounds the reconnections in a row that bring no event; one that brings an event starts the count afresh. */
export const maxResumes = 3;

/** defaultRetryMs is the wait before a second or later reconnection in a row when the server sent no retry: (the first is at once). */
const defaultRetryMs = 1000;

/** OutputStream names a program's output stream. */
export type OutputStream = 'stdout' | 'stderr';

/** WireEvent is an event as the stream reader passes it on. */
export type WireEvent =
  | { kind: 'output'; stream: OutputStream; bytes: Uint8Array }
  | { kind: 'run'; id: string }
  | { kind: 'result'; data: unknown }
  | { kind: 'other'; name: string; data: unknown };

/** What to do with a stream. */
export interface StreamSpec {
  /**
   * resumable says a dropped connection is resumed by sending the request
   * again with Last-Event-ID: GET /v1/runs/{id}/events, GET
   * /v1/agent-runs/{id}/events and GET /v1/analyses/{id}/questions/{n}/events.
   * A POST ?stream=1 is not: it is never sent twice.
   */
  resumable: boolean;
  /** runResult says the result is a run's (with stdout and stderr), from which output a resumption skipped is passed on. */
  runResult: boolean;
}

/** Dropped is a connection that failed, or a stream that ended before its result. */
class Dropped {
  constructor(readonly err: unknown) {}
}

/** StreamState is what a stream's reader knows across its connections. */
class StreamState {
  lastId = '';
  retryMs = defaultRetryMs;
  received = 0;
  resumed = false;
  readonly passed = { stdout: 0, stderr: 0 };
}

/**
 * readStream sends r, whose answer is an event stream, and yields its
 * events until the result (the last event yielded). An error event, the
 * server failing once the stream had started, is thrown as an APIError.
 *
 * When spec.resumable, a connection that fails or ends before the result
 * is resumed after the last event received (Last-Event-ID), at once, then
 * after the server's retry: delay, at most maxResumes times in a row
 * without an event. Output is passed on once: when the server resumes
 * with the result alone (a run that ended, whose record does not keep how
 * stdout and stderr were interleaved), the output not yet passed on is
 * passed from the result's.
 */
export async function* readStream(t: Transport, r: Req, spec: StreamSpec): AsyncGenerator<WireEvent, void> {
  const st = new StreamState();
  for (let failures = 0; ; failures++) {
    if (failures > 1) await sleep(st.retryMs, r.signal);
    if (r.signal?.aborted && failures > 0) throw r.signal.reason;
    // No retries of the transport's: the reconnections are these, bounded as stream.go bounds them.
    const req: Req = { ...r, retries: 0, ...(st.lastId ? { headers: { ...r.headers, 'Last-Event-ID': st.lastId } } : {}) };
    const received = st.received;
    try {
      yield* readOnce(t, req, st, spec);
      return;
    } catch (err) {
      if (!(err instanceof Dropped)) throw err;
      // Without an id to resume after, only a stream that brought nothing
      // can be sent again without repeating output.
      const noID = st.lastId === '' && st.received > 0;
      if (!spec.resumable || noID || r.signal?.aborted || (failures >= maxResumes && st.received === received)) throw err.err;
      if (st.received > received) failures = 0;
      st.resumed = true;
    }
  }
}

/** readOnce sends r and yields its events until the result; a failed connection or a stream cut before its result is thrown as a Dropped. */
async function* readOnce(t: Transport, r: Req, st: StreamState, spec: StreamSpec): AsyncGenerator<WireEvent, void> {
  const what = `${r.method} ${r.path}`;
  let opened: Awaited<ReturnType<Transport['open']>>;
  try {
    opened = await t.open(r);
  } catch (err) {
    if (err instanceof ConnectionError && !r.signal?.aborted) throw new Dropped(err);
    throw err;
  }
  const { resp, release, wrap } = opened;
  try {
    if (resp.status === 204) throw new CrucibleError(`crucible: ${what}: the server has no events after ${st.lastId}, and the result was not received`);
    if (!resp.body) throw new Dropped(new ConnectionError(`crucible: ${what}: the answer has no body`));
    const sr = new SSEReader(st.lastId);
    try {
      for await (const ev of sr.read(resp.body)) {
        const prev = st.lastId;
        st.lastId = sr.id;
        st.received++;
        if (sr.retryMs > 0) st.retryMs = sr.retryMs;
        switch (ev.name) {
          case 'stdout':
          case 'stderr': {
            const bytes = toBytes(decode(ev.name, ev.data) as Data);
            if (bytes.length > 0) {
              st.passed[ev.name] += bytes.length;
              yield { kind: 'output', stream: ev.name, bytes };
            }
            break;
          }
          case 'run':
            yield { kind: 'run', id: (decode(ev.name, ev.data) as { id: string }).id };
            break;
          case 'result': {
            const data = decode(ev.name, ev.data);
            if (spec.runResult && st.resumed) yield* fillGap(st, prev, data as { stdout?: Data; stderr?: Data });
            yield { kind: 'result', data };
            return;
          }
          case 'error':
            throw streamError(ev.data, what);
          default:
            yield { kind: 'other', name: ev.name, data: decode(ev.name, ev.data) };
        }
      }
    } catch (err) {
      if (sr.failed && !r.signal?.aborted) throw new Dropped(wrap(err));
      throw wrap(err);
    }
    throw new Dropped(new ConnectionError(`crucible: ${what}: the stream ended without a result`));
  } finally {
    release();
  }
}

/**
 * fillGap yields the output the result has that the events did not
 * bring: after a resumption, when the result's id says output came
 * between it and prev, the id of the event before it. Ids are the
 * positions the server gives (1 + the output bytes so far).
 */
function* fillGap(st: StreamState, prev: string, res: { stdout?: Data; stderr?: Data }): Generator<WireEvent> {
  if (!/^\d+$/.test(prev) || !/^\d+$/.test(st.lastId) || Number(st.lastId) <= Number(prev) + 1) return;
  for (const stream of ['stdout', 'stderr'] as const) {
    const out = toBytes(res[stream]);
    const n = st.passed[stream];
    if (n < out.length) {
      st.passed[stream] = out.length;
      yield { kind: 'output', stream, bytes: out.subarray(n) };
    }
  }
}

/** decode parses an event's JSON data, naming the event when it is not JSON. */
function decode(name: string, data: string): unknown {
  try {
    return JSON.parse(data);
  } catch (err) {
    throw new CrucibleError(`crucible: decode ${name} event: ${(err as Error).message}`, { cause: err });
  }
}

/** streamError is the APIError of an error event, whose data is the API's error description. */
function streamError(data: string, what: string): APIError {
  let e: { code?: string; message?: string; field?: string; rule?: string } = {};
  try {
    e = JSON.parse(data);
  } catch {
    // no description: the message below says what happened
  }
  return makeAPIError({
    status: statusOfCode(e.code ?? ''),
    code: (e.code ?? '') as ErrorCode | '',
    message: e.message || 'the server failed during the stream',
    field: e.field,
    rule: e.rule,
    request: what,
  });
}

/** sleep waits ms, throwing signal's reason if it aborts first. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
