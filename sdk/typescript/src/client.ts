// The client: new Crucible({baseUrl, apiKey}) and the API's calls.

import { AgentRun } from './agentruns.js';
import { Analysis, analysisForm, type AnalyzeOptions, type DatasetInput } from './analyses.js';
import { fromInput } from './data.js';
import { CrucibleError } from './errors.js';
import { Transport, type RequestOptions } from './http.js';
import { escapePath, RunResult, runEvents, type RunEvent } from './runs.js';
import { encodeFiles, Session } from './sessions.js';
import { readStream } from './stream.js';
import { OpenAITool, type ToolOptions } from './tool.js';
import type { AgentRunInfo, FileInput, ImageList, RunRecord, RunRequest, RunResponse, RunStatus, Schemas, SessionInfo } from './types.js';

/** Options of a Crucible client. */
export interface CrucibleOptions {
  /** The server, such as "http://127.0.0.1:8080"; a path in it prefixes every API path. Default: $CRUCIBLE_URL (Node). */
  baseUrl?: string;
  /** The API key ("crk_…"), sent as a Bearer token. Default: $CRUCIBLE_API_KEY (Node). */
  apiKey?: string;
  /** The fetch to use; globalThis.fetch by default. */
  fetch?: typeof fetch;
  /** How long a call may wait for its answer, in milliseconds (a stream: for its first byte); 300000 by default, 0 for no limit. */
  timeoutMs?: number;
  /** How many times an idempotent request (GET, PUT, DELETE) is sent again after a failed connection or a 429, 502, 503 or 504; 2 by default. A POST is never sent twice. */
  retries?: number;
}

/** Options of a run: the run request's fields but code, with files as text or bytes. */
export interface RunOptions extends RequestOptions, Omit<RunRequest, 'code' | 'files' | 'stdin'> {
  /** Files placed in the working directory first. */
  files?: FileInput[];
  /** The program's standard input. */
  stdin?: string | Uint8Array;
  /** Let the server answer from its result cache (an identical earlier run of the tenant), and cache this run's result. */
  cache?: boolean;
}

/** Options of a session: the session request's fields, with files as text or bytes. */
export interface SessionOptions extends RequestOptions, Omit<Schemas['SessionRequest'], 'files'> {
  files?: FileInput[];
}

/** Options of an agent run: the agent-run request's fields but the task, with files as text or bytes. */
export interface AgentRunOptions extends RequestOptions, Omit<Schemas['AgentRunRequest'], 'task' | 'files'> {
  files?: FileInput[];
}

/** Filters and paging of listRuns. */
export interface ListRunsOptions extends RequestOptions {
  status?: RunStatus;
  language?: string;
  /** Runs of this session. */
  session?: string;
  /** Executions of this agent run. */
  agentRun?: string;
  /** Runs created at or after this time. */
  since?: Date;
  /** The page size (server default 50, at most 500). */
  limit?: number;
  /** The next of the previous page. */
  cursor?: string;
}

/** The default of timeoutMs. */
const defaultTimeoutMs = 300_000;

/**
 * Crucible is a client of a Crucible server: it runs code (run,
 * streamRun), reads run records (getRun, listRuns), opens sessions,
 * creates analyses, starts agent runs, and hands a model a tool
 * (asOpenAITool). It works in Node >= 18 and in browsers, with fetch
 * only.
 *
 *     const crucible = new Crucible(); // CRUCIBLE_URL, CRUCIBLE_API_KEY
 *     const res = await crucible.run('print(6*7)');
 *     console.log(res.status, res.stdout); // ok 42
 */
export class Crucible {
  /** The server's base URL, without a trailing slash. */
  readonly baseUrl: string;
  private readonly t: Transport;

  constructor(opts: CrucibleOptions = {}) {
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {};
    const raw = opts.baseUrl ?? env.CRUCIBLE_URL;
    if (!raw) throw new CrucibleError('crucible: baseUrl: required (pass {baseUrl} or set CRUCIBLE_URL)');
    this.baseUrl = checkBaseUrl(raw);
    const f = opts.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
    const retries = opts.retries ?? 2;
    const timeoutMs = opts.timeoutMs ?? defaultTimeoutMs;
    if (!Number.isInteger(retries) || retries < 0) throw new CrucibleError(`crucible: retries: must be an integer >= 0, got ${retries}`);
    if (!(timeoutMs >= 0)) throw new CrucibleError(`crucible: timeoutMs: must be >= 0, got ${timeoutMs}`);
    this.t = new Transport({ baseUrl: this.baseUrl, apiKey: opts.apiKey ?? env.CRUCIBLE_API_KEY, fetch: f, timeoutMs, retries });
  }

  /**
   * run runs code (Python unless opts.language says otherwise) and returns
   * its result. A program that fails is a result (status "error", with
   * error and its hint), not an exception; exceptions are requests the
   * server refused (ValidationError naming the field, ...) and failed
   * connections. The request is never sent twice.
   */
  async run(code: string, opts: RunOptions = {}): Promise<RunResult> {
    const { signal, timeoutMs, cache, ...req } = opts;
    const raw = await this.t.json<RunResponse>({ signal, timeoutMs, method: 'POST', path: '/v1/runs', query: { cache: cache ? '1' : undefined }, ...runBody(code, req) });
    return new RunResult(raw, this.t);
  }

  /**
   * streamRun starts code as run does and yields its events as they come:
   * { type: 'run', id } first, then stdout and stderr chunks, then
   * { type: 'result', result }. The run is queued (?async=1) and followed
   * (GET /v1/runs/{id}/events), so a dropped connection is resumed with
   * Last-Event-ID (at once, then after the server's retry: delay, at most
   * 3 times in a row without a new event) while the run goes on; each
   * byte of output is yielded once, in order.
   */
  async *streamRun(code: string, opts: RunOptions = {}): AsyncGenerator<RunEvent, void> {
    const id = await this.runAsync(code, opts);
    yield { type: 'run', id };
    const { signal, timeoutMs } = opts;
    for await (const ev of this.followRun(id, { signal, timeoutMs })) if (ev.type !== 'run') yield ev; // its id came first
  }

  /** runAsync queues code as run does and returns the run's ID at once (?async=1); follow it with followRun, or read it with getRun. */
  async runAsync(code: string, opts: RunOptions = {}): Promise<string> {
    const { signal, timeoutMs, cache, ...req } = opts;
    const { id } = await this.t.json<Schemas['RunAccepted']>({ signal, timeoutMs, method: 'POST', path: '/v1/runs', query: { async: '1', cache: cache ? '1' : undefined }, ...runBody(code, req) });
    if (!id) throw new CrucibleError('crucible: POST /v1/runs: the answer has no run id');
    return id;
  }

  /** followRun yields the events of run id, as streamRun does after its start: live while it runs, replayed from its record once it ended. */
  followRun(id: string, opts: RequestOptions = {}): AsyncGenerator<RunEvent, void> {
    const r = { ...opts, method: 'GET' as const, path: `/v1/runs/${encodeURIComponent(id)}/events` };
    return runEvents(readStream(this.t, r, { resumable: true, runResult: true }), this.t);
  }

  /** getRun returns the record of run id; another tenant's run, or an unknown id, is a NotFoundError. */
  async getRun(id: string, opts: RequestOptions = {}): Promise<RunResult> {
    return new RunResult(await this.t.json<RunRecord>({ ...opts, method: 'GET', path: `/v1/runs/${encodeURIComponent(id)}` }), this.t);
  }

  /** artifact returns the bytes of the artifact name of run id (result.artifacts[i].bytes() does the same). */
  artifact(id: string, name: string, opts: RequestOptions = {}): Promise<Uint8Array> {
    return this.t.bytes({ ...opts, method: 'GET', path: `/v1/runs/${encodeURIComponent(id)}/artifacts/${escapePath(name)}` });
  }

  /** listRuns returns a page of the caller's run records, newest first, and the cursor of the next page ("" after the last). */
  async listRuns(opts: ListRunsOptions = {}): Promise<{ runs: RunResult[]; next: string }> {
    const { signal, timeoutMs, status, language, session, agentRun, since, limit, cursor } = opts;
    const page = await this.t.json<Schemas['RunList']>({
      signal,
      timeoutMs,
      method: 'GET',
      path: '/v1/runs',
      query: { status, language, session, agent_run: agentRun, since: since?.toISOString(), limit, cursor },
    });
    return { runs: page.runs.map((r) => new RunResult(r, this.t)), next: page.next };
  }

  /** images lists the images the server offers: the default of runs, the default of sessions and analyses, and each image. */
  images(opts: RequestOptions = {}): Promise<ImageList> {
    return this.t.json<ImageList>({ ...opts, method: 'GET', path: '/v1/images' });
  }

  /**
   * session opens a Python session (in the server's session image, with
   * pandas, unless opts.image names another) and returns it. Close it
   * with close(), or open it with `await using`.
   */
  async session(opts: SessionOptions = {}): Promise<Session> {
    const { signal, timeoutMs, files, ...req } = opts;
    const body: Schemas['SessionRequest'] = { ...req, files: encodeFiles(files) };
    const info = await this.t.json<SessionInfo>({ signal, timeoutMs, method: 'POST', path: '/v1/sessions', body: JSON.stringify(body), contentType: 'application/json' });
    if (!info.id) throw new CrucibleError('crucible: POST /v1/sessions: the answer has no session id');
    return new Session(this.t, info.id);
  }

  /** attachSession returns a handle on an open session by its ID, without a request: an unknown ID fails at the first call. */
  attachSession(id: string): Session {
    return new Session(this.t, id);
  }

  /** listSessions describes the caller's open sessions, newest first. */
  async listSessions(opts: RequestOptions = {}): Promise<SessionInfo[]> {
    return (await this.t.json<Schemas['SessionList']>({ ...opts, method: 'GET', path: '/v1/sessions' })).sessions;
  }

  /**
   * analyze uploads datasets for a data analysis (multipart) and returns
   * the analysis at once: its ask() waits for the upload, so
   * `await crucible.analyze(files).ask(question)` is one line; info()
   * gives the profile.
   */
  analyze(datasets: DatasetInput[], opts: AnalyzeOptions = {}): Analysis {
    const { signal, timeoutMs } = opts;
    const created = this.t.json<Schemas['Analysis']>({ signal, timeoutMs, method: 'POST', path: '/v1/analyses', body: analysisForm(datasets, opts) });
    return new Analysis(this.t, created);
  }

  /**
   * agentRun starts the server's code agent on task and returns a handle
   * at once: follow it with events(), decide approvals (opts.approve:
   * every program waits for one) with approve() and deny(), and have its
   * end with wait(). A server without a model answers 501 (ServerError).
   */
  async agentRun(task: string, opts: AgentRunOptions = {}): Promise<AgentRun> {
    const { signal, timeoutMs, files, ...req } = opts;
    const body: Schemas['AgentRunRequest'] = { ...req, task, files: encodeFiles(files) };
    const info = await this.t.json<AgentRunInfo>({ signal, timeoutMs, method: 'POST', path: '/v1/agent-runs', body: JSON.stringify(body), contentType: 'application/json' });
    if (!info.id) throw new CrucibleError('crucible: POST /v1/agent-runs: the answer has no run id');
    return new AgentRun(this.t, info);
  }

  /** getAgentRun returns a handle on agent run id as it is now; an unknown run (or another tenant's, or one ended long ago) is a NotFoundError. */
  async getAgentRun(id: string, opts: RequestOptions = {}): Promise<AgentRun> {
    return new AgentRun(this.t, await this.t.json<AgentRunInfo>({ ...opts, method: 'GET', path: `/v1/agent-runs/${encodeURIComponent(id)}` }));
  }

  /**
   * asOpenAITool returns a tool for models that call tools the OpenAI
   * way: pass tool.definition in `tools`, and for each tool call append
   * (await tool.call(call.function.arguments)).messages(call.id) to the
   * conversation. It runs the code in a session it opens at its first call
   * and keeps (variables persist): close it when done.
   */
  asOpenAITool(opts: ToolOptions & { session?: SessionOptions } = {}): OpenAITool {
    return new OpenAITool(() => this.session(opts.session), opts);
  }
}

/** runBody is the JSON body of a run request. */
function runBody(code: string, req: Omit<RunOptions, 'signal' | 'timeoutMs' | 'cache'>): { body: string; contentType: string } {
  const { files, stdin, ...rest } = req;
  const body: RunRequest = { ...rest, code };
  if (files) body.files = encodeFiles(files);
  if (stdin !== undefined) body.stdin = fromInput(stdin);
  return { body: JSON.stringify(body), contentType: 'application/json' };
}

/** checkBaseUrl checks that raw is an absolute http(s) URL without user info, query or fragment, and returns it without a trailing slash. */
function checkBaseUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new CrucibleError(`crucible: baseUrl: must be an absolute http:// or https:// URL, got ${JSON.stringify(raw)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new CrucibleError(`crucible: baseUrl: must start with http:// or https://, got ${JSON.stringify(raw)}`);
  if (u.username || u.password || u.search || u.hash) throw new CrucibleError(`crucible: baseUrl: must not have user info, a query or a fragment, got ${JSON.stringify(raw)}`);
  return u.toString().replace(/\/+$/, '');
}
