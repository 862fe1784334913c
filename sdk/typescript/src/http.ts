// The transport: one place that sends requests, with the API key, a
// deadline, and retries that never repeat a request that is not
// idempotent.

import { APIError, ConnectionError, ConnectionTimeoutError, CrucibleError, readError } from './errors.js';

/** Options of a single call: a signal to cancel it and a timeout of its own. */
export interface RequestOptions {
  /** Cancels the call; the SDK then throws the signal's reason. */
  signal?: AbortSignal;
  /** Overrides the client's timeoutMs for this call. */
  timeoutMs?: number;
}

/** A request of the API. */
export interface Req extends RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** The path, escaped, starting with "/". */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: string | Uint8Array | FormData;
  contentType?: string;
  headers?: Record<string, string>;
  /** Overrides the client's retries for this request (streams resume by themselves, as client/stream.go does, and set 0). */
  retries?: number;
}

/** What the transport needs of the client's options. */
export interface TransportOptions {
  baseUrl: string;
  apiKey: string | undefined;
  fetch: typeof fetch;
  timeoutMs: number;
  retries: number;
}

/** Statuses after which an idempotent request is sent again: the server or a proxy in front of it was busy or briefly away, and did nothing. */
const retryStatuses = new Set([429, 502, 503, 504]);

/** The longest Retry-After the SDK waits for by itself; a longer one is the caller's to decide (RateLimitError.retryAfterMs). */
const maxRetryWaitMs = 30_000;

/** The first retry's backoff without a Retry-After; doubled at each retry. */
const baseBackoffMs = 250;

/**
 * idempotent says whether sending r twice does what sending it once does.
 * Only those requests are retried: a POST (a run, a session, a cell, an
 * agent run, an approval) that may have reached the server is never sent
 * again, since the server may have acted on it (a run would run twice).
 * PUT replaces a session file with the same bytes.
 */
function idempotent(r: Req): boolean {
  return r.method === 'GET' || r.method === 'PUT' || r.method === 'DELETE';
}

/** Transport sends the API's requests. */
export class Transport {
  constructor(readonly opts: TransportOptions) {}

  /**
   * call sends r and hands the 2xx response to read, within r's deadline
   * (timeoutMs covers the answer and reading it); any other status is
   * thrown as an APIError.
   */
  async call<T>(r: Req, read: (resp: Response) => Promise<T>): Promise<T> {
    const d = new Deadline(r.signal, r.timeoutMs ?? this.opts.timeoutMs, `${r.method} ${r.path}`);
    try {
      const resp = await this.send(r, d);
      try {
        return await read(resp);
      } catch (err) {
        throw d.wrap(err);
      }
    } finally {
      d.release();
    }
  }

  /** json sends r and decodes its JSON answer; an answer that is not JSON is a CrucibleError saying so. */
  json<T>(r: Req): Promise<T> {
    return this.call(r, async (resp) => {
      const text = await resp.text();
      try {
        return JSON.parse(text) as T;
      } catch (err) {
        throw new CrucibleError(`crucible: ${r.method} ${r.path}: decode answer: ${(err as Error).message}`, { cause: err });
      }
    });
  }

  /** bytes sends r and returns its answer's bytes. */
  bytes(r: Req): Promise<Uint8Array> {
    return this.call(r, async (resp) => new Uint8Array(await resp.arrayBuffer()));
  }

  /** discard sends r and drops its answer's body (reading it, so the connection is reused). */
  discard(r: Req): Promise<void> {
    return this.call(r, async (resp) => {
      await resp.arrayBuffer();
    });
  }

  /**
   * open sends r, whose answer is a stream, and returns the 2xx response:
   * the timeout covers the wait for its headers only; r.signal still
   * cancels the reading of its body. release must be called once the
   * body is read or dropped.
   */
  async open(r: Req): Promise<{ resp: Response; release: () => void; wrap: (err: unknown) => unknown }> {
    const d = new Deadline(r.signal, r.timeoutMs ?? this.opts.timeoutMs, `${r.method} ${r.path}`);
    try {
      const resp = await this.send(r, d);
      d.stopTimer();
      return { resp, release: () => d.release(), wrap: (err) => d.wrap(err) };
    } catch (err) {
      d.release();
      throw err;
    }
  }

  /** send sends r, retrying it as idempotent allows, and returns a 2xx response. */
  private async send(r: Req, d: Deadline): Promise<Response> {
    const url = this.url(r);
    const headers: Record<string, string> = { ...r.headers };
    if (r.contentType) headers['Content-Type'] = r.contentType;
    if (this.opts.apiKey) headers['Authorization'] = `Bearer ${this.opts.apiKey}`;
    const what = `${r.method} ${r.path}`;
    for (let attempt = 0; ; attempt++) {
      const retry = idempotent(r) && attempt < (r.retries ?? this.opts.retries);
      let resp: Response;
      try {
        resp = await this.opts.fetch(url, { method: r.method, headers, body: r.body as BodyInit | undefined, signal: d.signal });
      } catch (err) {
        const e = d.wrap(err);
        if (retry && e instanceof ConnectionError && !(e instanceof ConnectionTimeoutError)) {
          await d.sleep(backoff(attempt));
          continue;
        }
        throw e;
      }
      if (resp.ok) return resp;
      const apiErr: APIError = await readError(resp, what).catch((err) => {
        throw d.wrap(err);
      });
      const wait = apiErr.retryAfterMs ?? backoff(attempt);
      if (retry && retryStatuses.has(resp.status) && wait <= maxRetryWaitMs) {
        await d.sleep(wait);
        continue;
      }
      throw apiErr;
    }
  }

  /** url is the absolute URL of r. */
  private url(r: Req): string {
    let u = this.opts.baseUrl + r.path;
    if (r.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(r.query)) if (v !== undefined && v !== '') q.set(k, String(v));
      const s = q.toString();
      if (s) u += '?' + s;
    }
    return u;
  }
}

/** backoff is the wait before retry attempt+1 without a Retry-After: doubling, with jitter so that clients spread out. */
function backoff(attempt: number): number {
  const ms = baseBackoffMs * 2 ** attempt;
  return ms / 2 + Math.random() * (ms / 2);
}

/**
 * Deadline is one call's cancellation: the caller's signal and the
 * call's timeout, joined into the signal given to fetch, and the mapping
 * of what fetch throws into the SDK's errors.
 */
class Deadline {
  private readonly ctl = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timedOut = false;
  private readonly onAbort: () => void;

  constructor(
    private readonly user: AbortSignal | undefined,
    private readonly timeoutMs: number,
    private readonly what: string,
  ) {
    this.onAbort = () => this.ctl.abort(user?.reason);
    if (user?.aborted) this.ctl.abort(user.reason);
    else user?.addEventListener('abort', this.onAbort, { once: true });
    if (timeoutMs > 0 && Number.isFinite(timeoutMs)) {
      this.timer = setTimeout(() => {
        this.timedOut = true;
        this.ctl.abort();
      }, timeoutMs);
    }
  }

  /** The signal to give fetch. */
  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  /** stopTimer ends the timeout (a stream's headers came). */
  stopTimer(): void {
    clearTimeout(this.timer);
  }

  /** release ends the timeout and forgets the caller's signal. */
  release(): void {
    this.stopTimer();
    this.user?.removeEventListener('abort', this.onAbort);
  }

  /**
   * wrap maps what fetch or a body read threw: the caller's abort is
   * thrown as its reason, the timeout as a ConnectionTimeoutError, a
   * failed connection as a ConnectionError; the SDK's own errors pass.
   */
  wrap(err: unknown): unknown {
    if (err instanceof CrucibleError) return err;
    if (this.timedOut) return new ConnectionTimeoutError(`crucible: ${this.what}: no answer within ${this.timeoutMs} ms`, { cause: err });
    if (this.user?.aborted) return this.user.reason;
    const detail = err instanceof Error ? causeText(err) : String(err);
    return new ConnectionError(`crucible: ${this.what}: ${detail}`, { cause: err });
  }

  /** sleep waits ms, or less if the call is cancelled or times out, which it then throws. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(t);
        reject(this.wrap(new Error('aborted while waiting to retry')));
      };
      const t = setTimeout(() => {
        this.ctl.signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      if (this.ctl.signal.aborted) onAbort();
      else this.ctl.signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** causeText is an error's message with its cause's (fetch's "fetch failed" says little; its cause says ECONNREFUSED). */
function causeText(err: Error): string {
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error && cause.message && cause.message !== err.message) return `${err.message}: ${cause.message}`;
  return err.message;
}
