// Sessions: a live interpreter on the server whose variables and files
// persist from one cell to the next.

import { fromInput } from './data.js';
import { defineAsyncDispose } from './dispose.js';
import { SessionClosedError } from './errors.js';
import type { RequestOptions, Transport } from './http.js';
import { escapePath, RunResult, runEvents, type RunEvent } from './runs.js';
import { readStream } from './stream.js';
import type { FileInfo, FileInput, RunResponse, Schemas, SessionInfo } from './types.js';

/** Options of a cell. */
export interface ExecOptions extends RequestOptions {
  /** The namespace the cell runs in ("" or absent: the session's default). */
  context?: string;
  /** Replaces the context's namespace by a fresh one before the cell runs. */
  resetContext?: boolean;
  /** Overrides the session's wall-time limit for this cell, in milliseconds (timeoutMs is the HTTP request's). */
  cellTimeoutMs?: number;
}

/** The files of a session's working directory. */
export interface SessionFiles {
  /** write creates or replaces the file name, a path relative to the working directory such as "data/in.csv". */
  write(name: string, content: string | Uint8Array, opts?: RequestOptions): Promise<void>;
  /** read returns the content of the file name; a missing file is a NotFoundError. */
  read(name: string, opts?: RequestOptions): Promise<Uint8Array>;
  /** readText returns the content of the file name decoded as UTF-8. */
  readText(name: string, opts?: RequestOptions): Promise<string>;
  /** list lists the working directory, recursively. */
  list(opts?: RequestOptions): Promise<FileInfo[]>;
}

/**
 * Session is a live Python interpreter on the server. Open it with
 * crucible.session() (or crucible.attachSession(id)), and end it with
 * close(), or let `await using` close it (Symbol.asyncDispose). The
 * server also closes it when idle; its calls then throw a
 * SessionClosedError (410).
 */
export class Session {
  /** The session's ID on the server. */
  readonly id: string;
  /** The session's files. */
  readonly files: SessionFiles;
  private readonly path: string;
  private closed = false;

  constructor(
    private readonly t: Transport,
    id: string,
  ) {
    this.id = id;
    this.path = `/v1/sessions/${encodeURIComponent(id)}`;
    const filePath = (name: string) => `${this.path}/files/${escapePath(name)}`;
    this.files = {
      write: (name, content, opts) =>
        t.discard({ ...opts, method: 'PUT', path: filePath(name), body: typeof content === 'string' ? new TextEncoder().encode(content) : content, contentType: 'application/octet-stream' }),
      read: (name, opts) => t.bytes({ ...opts, method: 'GET', path: filePath(name) }),
      readText: async (name, opts) => new TextDecoder().decode(await t.bytes({ ...opts, method: 'GET', path: filePath(name) })),
      list: async (opts) => (await t.json<Schemas['FileList']>({ ...opts, method: 'GET', path: `${this.path}/files` })).files,
    };
  }

  /**
   * exec runs a cell and returns its result: stdout, stderr, value (the
   * repr of the last expression), displays, artifacts. Code that fails is
   * a result with status "error", not an exception.
   */
  async exec(code: string, opts: ExecOptions = {}): Promise<RunResult> {
    const raw = await this.t.json<RunResponse>({ ...opts, method: 'POST', path: `${this.path}/exec`, ...cellBody(code, opts) });
    return new RunResult(raw, this.t);
  }

  /**
   * execStream runs a cell and yields its output as it comes, then its
   * result. A cell's stream has no event ids: a dropped connection is not
   * resumed (and the server interrupts the cell).
   */
  execStream(code: string, opts: ExecOptions = {}): AsyncGenerator<RunEvent, void> {
    const r = { ...opts, method: 'POST' as const, path: `${this.path}/exec`, query: { stream: '1' }, ...cellBody(code, opts) };
    return runEvents(readStream(this.t, r, { resumable: false, runResult: true }), this.t);
  }

  /** info returns the session as the server sees it now: image, limits, cells run, restarts, last use. */
  info(opts?: RequestOptions): Promise<SessionInfo> {
    return this.t.json<SessionInfo>({ ...opts, method: 'GET', path: this.path });
  }

  /**
   * close ends the session and destroys its sandbox. A session already
   * closed, by this handle, another client or the server when it was idle,
   * is no error: close() does nothing then.
   */
  async close(opts?: RequestOptions): Promise<void> {
    if (this.closed) return;
    try {
      await this.t.discard({ ...opts, method: 'DELETE', path: this.path });
    } catch (err) {
      if (!(err instanceof SessionClosedError)) throw err;
    }
    this.closed = true;
  }
}

// A Session is closed at the end of an `await using` block.
defineAsyncDispose(Session.prototype);

/** The declaration of [Symbol.asyncDispose], which defineAsyncDispose adds where the runtime has the symbol. */
export interface Session {
  [Symbol.asyncDispose](): Promise<void>;
}

/** cellBody is the JSON body of a cell. */
function cellBody(code: string, opts: ExecOptions): { body: string; contentType: string } {
  const cell: Schemas['Cell'] = { code };
  if (opts.context) cell.context = opts.context;
  if (opts.resetContext) cell.reset_context = true;
  if (opts.cellTimeoutMs) cell.timeout_ms = opts.cellTimeoutMs;
  return { body: JSON.stringify(cell), contentType: 'application/json' };
}

/** encodeFiles encodes files for a session, run or agent-run request. */
export function encodeFiles(files: FileInput[] | undefined): Schemas['File'][] | undefined {
  return files?.map((f) => ({ ...f, content: fromInput(f.content) }));
}
