// Results of runs and session cells, and the events of their streams.

import { Artifact } from './artifact.js';
import { toBytes, toText } from './data.js';
import type { Transport } from './http.js';
import type { WireEvent } from './stream.js';
import type { ExecError, Limits, Metrics, RunRecord, RunResponse, RunStatus, Schemas } from './types.js';

/** A display() of a session cell: its richest form (data, decoded) and its text. */
export interface DisplayOutput {
  mime: Schemas['Display']['mime'];
  /** Its plain-text form (repr). */
  text: string;
  /** The data of mime, decoded (a PNG's bytes, HTML's text as UTF-8); undefined when omitted. */
  data: Uint8Array | undefined;
  /** Why data is not given. */
  omitted: string | undefined;
}

/**
 * RunResult is what a run or a session cell produced, or a run record
 * (getRun, listRuns). A program that fails is a result, not an error:
 * status and exitCode say how it ended, error (with the server's hint)
 * what it raised.
 */
export class RunResult {
  /** The run record's ID (GET /v1/runs/{id}); session cells have one too. */
  readonly id: string;
  /** How the run ended (ok, error, timeout, ...), or for a record still going, queued or running. */
  readonly status: RunStatus;
  /** The exit code; -1 when the program was ended by a signal or never started. */
  readonly exitCode: number;
  /** Standard output, as text (bytes that are not UTF-8 become U+FFFD; stdoutBytes has them exactly). */
  readonly stdout: string;
  /** Standard error, as text. */
  readonly stderr: string;
  /** Standard output, as bytes. */
  readonly stdoutBytes: Uint8Array;
  /** Standard error, as bytes. */
  readonly stderrBytes: Uint8Array;
  /** The uncaught exception the program ended with (type, message, line, traceback, hint), if any. */
  readonly error: ExecError | undefined;
  /** Explains a status other than ok or error. */
  readonly reason: string | undefined;
  /** Measurements: wall_ms, cpu_ms, peak_memory_bytes, queue_ms, start_ms. */
  readonly metrics: Metrics;
  /** The limits applied, defaults filled in. */
  readonly limits: Limits;
  /** The canonical language ("python", "javascript", "bash"). */
  readonly language: string;
  /** The image the code ran in. */
  readonly image: string | undefined;
  /** Set when the result came from the cache (run with {cache: true}). */
  readonly cacheHit: boolean;
  /** The files the program left, bytes on demand. */
  readonly artifacts: Artifact[];
  /** Sessions: the repr of the cell's last expression. */
  readonly value: string | undefined;
  /** Sessions: what the cell showed with display(). */
  readonly displays: DisplayOutput[];
  /** The API's JSON, as the server sent it. */
  readonly raw: RunResponse | RunRecord;

  constructor(raw: RunResponse | RunRecord, t: Transport) {
    this.raw = raw;
    this.id = raw.id;
    this.status = raw.status;
    this.exitCode = raw.exit_code;
    this.stdoutBytes = toBytes(raw.stdout);
    this.stderrBytes = toBytes(raw.stderr);
    this.stdout = toText(raw.stdout);
    this.stderr = toText(raw.stderr);
    this.error = raw.error;
    this.reason = raw.reason;
    this.metrics = raw.metrics;
    this.limits = raw.limits;
    this.language = raw.language;
    this.image = raw.image;
    this.cacheHit = raw.cache_hit;
    const path = `/v1/runs/${encodeURIComponent(raw.id)}/artifacts/`;
    this.artifacts = (raw.artifacts ?? []).map((a) => new Artifact(a, () => t.bytes({ method: 'GET', path: path + escapePath(a.name) })));
    const r = raw as Partial<RunResponse>;
    this.value = r.value;
    this.displays = (r.displays ?? []).map((d) => ({ mime: d.mime, text: d.text, data: d.data == null ? undefined : toBytes(d.data), omitted: d.omitted }));
  }

  /** ok says whether the program ran to its end with exit code 0. */
  get ok(): boolean {
    return this.status === 'ok';
  }

  /** charts are the PNG images among the artifacts: the figures matplotlib's plt.show() or savefig() left. */
  get charts(): Artifact[] {
    return this.artifacts.filter((a) => a.isPNG);
  }
}

/** RunEvent is an event of a streamed run or cell: its id (runs only), output as it comes, then the result. */
export type RunEvent =
  | { type: 'run'; id: string }
  | { type: 'stdout' | 'stderr'; bytes: Uint8Array; text: string }
  | { type: 'result'; result: RunResult };

/**
 * runEvents turns a stream's events into RunEvents. Output text is
 * decoded per stream, so a character cut between two chunks is whole in
 * the second.
 */
export async function* runEvents(events: AsyncIterable<WireEvent>, t: Transport): AsyncGenerator<RunEvent, void> {
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  for await (const ev of events) {
    switch (ev.kind) {
      case 'run':
        yield { type: 'run', id: ev.id };
        break;
      case 'output':
        yield { type: ev.stream, bytes: ev.bytes, text: decoders[ev.stream].decode(ev.bytes, { stream: true }) };
        break;
      case 'result':
        yield { type: 'result', result: new RunResult(ev.data as RunResponse, t) };
        break;
    }
  }
}

/** escapePath escapes each slash-separated component of p for a URL path, keeping the slashes. */
export function escapePath(p: string): string {
  return p.split('/').map(encodeURIComponent).join('/');
}
