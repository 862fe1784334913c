// Data analyses: datasets loaded into a session as DataFrames, and
// questions about them answered by the server's data-analysis agent.

import { followAgent, type AgentEvent } from './agentruns.js';
import { Artifact } from './artifact.js';
import { defineAsyncDispose } from './dispose.js';
import { SessionClosedError } from './errors.js';
import type { RequestOptions, Transport } from './http.js';
import { escapePath } from './runs.js';
import type { AgentDecision, AgentRunStatus, AnalysisInfo, AnalysisQuestion, Limits, Schemas } from './types.js';

/** A dataset to upload: a file name (its extension tells the format: .csv, .tsv, .json, .xlsx, .parquet, ...) and its content. */
export interface DatasetInput {
  name: string;
  content: string | Uint8Array | Blob;
}

/** Options of a new analysis. */
export interface AnalyzeOptions extends RequestOptions {
  /** The image, among crucible.images(); the server's session image (with pandas) when absent. */
  image?: string;
  /** The session's limits. */
  limits?: Limits;
}

/** The question being answered, as onEvent gets it: its number, and the decisions on its approvals. */
export interface QuestionControl {
  /** The question's number in the analysis, from 1. */
  n: number;
  /** approve lets the program waiting under approvalId (an approval event's approval.id) run. */
  approve(approvalId: string, reason?: string): Promise<AgentDecision>;
  /** deny refuses it: the question ends "denied". */
  deny(approvalId: string, reason?: string): Promise<AgentDecision>;
}

/** Options of a question: the budgets of the agent run that answers it, and a callback for its progress. */
export interface AskOptions extends RequestOptions, Omit<Schemas['QuestionRequest'], 'question'> {
  /**
   * onEvent receives each event of the question as it comes (steps, code,
   * output, approvals); with approve: true, an approval event is the
   * moment to call q.approve or q.deny. The stream waits for it.
   */
  onEvent?: (ev: AgentEvent, q: QuestionControl) => void | Promise<void>;
}

/** A table an answer's code showed (show_table or a DataFrame left as the cell's value): its first rows as data. */
export interface Table {
  name: string | undefined;
  columns: string[];
  /** The first rows, each a list of values in column order. */
  rows: unknown[][];
  /** The table's shape, of which rows is the start. */
  totalRows: number;
  totalColumns: number;
  /** The same rows as HTML (program output: show it sanitised). */
  html: string;
}

/** A figure an answer's code drew, PNG, with its title and its axes' labels. */
export class Chart extends Artifact {
  /** The figure's title, "" when it has none. */
  readonly title: string;
  /** Its axes: title, xlabel, ylabel. */
  readonly axes: Record<string, unknown>[];

  constructor(c: NonNullable<Schemas['AnalysisAnswer']['charts']>[number], fetchBytes: () => Promise<Uint8Array>) {
    super({ name: c.name ?? '', mime: c.mime ?? 'image/png', size: c.size ?? 0, sha256: c.sha256 ?? '', withheld: c.withheld }, fetchBytes);
    this.title = c.title ?? '';
    this.axes = (c.axes ?? []) as Record<string, unknown>[];
  }
}

/** Answer is a question of an analysis as it ended: the answer's text, its code and output, tables and charts. */
export class Answer {
  /** The question's number in the analysis, from 1. */
  readonly n: number;
  /** How the run that answered it ended: "answered", or why not ("failed", "denied", ...). */
  readonly status: AgentRunStatus;
  /** The answer, in the model's words ("" when there is none). */
  readonly text: string;
  /** Why it ended without an answer. */
  readonly reason: string | undefined;
  /** The code whose run produced the answer. */
  readonly code: string;
  /** That code's standard output. */
  readonly output: string;
  /** The tables that code showed. */
  readonly tables: Table[];
  /** The figures that code left open. */
  readonly charts: Chart[];
  /** The files that code wrote or changed, bytes on demand. */
  readonly files: Artifact[];
  /** The API's JSON of the question. */
  readonly raw: AnalysisQuestion;

  constructor(q: AnalysisQuestion, fetchFile: (name: string) => Promise<Uint8Array>) {
    const a = q.answer;
    this.raw = q;
    this.n = q.n;
    this.status = a?.status ?? q.run.status;
    this.text = a?.text ?? q.run.answer ?? '';
    this.reason = a?.reason ?? q.run.reason;
    this.code = a?.code ?? '';
    this.output = a?.output ?? '';
    this.tables = (a?.tables ?? []).map((t) => ({ name: t.name, columns: t.columns, rows: t.rows, totalRows: t.total_rows, totalColumns: t.total_columns, html: t.html }));
    this.charts = (a?.charts ?? []).map((c) => new Chart(c, () => fetchFile(c.name ?? '')));
    this.files = (a?.files ?? []).map(
      (f) => new Artifact({ name: f.name ?? '', mime: f.mime ?? 'application/octet-stream', size: f.size ?? 0, sha256: f.sha256 ?? '', withheld: f.withheld }, () => fetchFile(f.name ?? '')),
    );
  }
}

/**
 * Analysis is a data analysis: crucible.analyze(datasets) uploads the
 * datasets at once, and ask() waits for that before asking, so that
 *
 *     const answer = await crucible.analyze([{ name: 'data.csv', content: csv }]).ask('Plot y against x');
 *
 * works as one line. An analysis is a session of the caller's: close it
 * (or `await using` it) when done.
 */
export class Analysis {
  private readonly created: Promise<AnalysisInfo>;
  private closed = false;

  constructor(
    private readonly t: Transport,
    created: Promise<AnalysisInfo>,
  ) {
    this.created = created;
    created.catch(() => {}); // reported to whoever awaits it, never as an unhandled rejection
  }

  /** info waits for the analysis to be created and returns it: id, session, datasets, profile (as JSON and as text). */
  info(): Promise<AnalysisInfo> {
    return this.created;
  }

  /**
   * ask asks a question, follows the agent run that answers it to its end
   * (passing each event to opts.onEvent), and returns the answer. A
   * server without a model answers 501 (ServerError, code
   * not_configured); a question while another is answered, 409.
   */
  async ask(question: string, opts: AskOptions = {}): Promise<Answer> {
    const { signal, timeoutMs, onEvent, ...budgets } = opts;
    const base = await this.path();
    const q = await this.t.json<AnalysisQuestion>({
      signal,
      timeoutMs,
      method: 'POST',
      path: `${base}/questions`,
      body: JSON.stringify({ ...budgets, question }),
      contentType: 'application/json',
    });
    const decide = (approvalId: string, approve: boolean, reason = '') =>
      this.t.json<AgentDecision>({
        signal,
        timeoutMs,
        method: 'POST',
        path: `${base}/questions/${q.n}/approvals/${encodeURIComponent(approvalId)}`,
        body: JSON.stringify(reason ? { approve, reason } : { approve }),
        contentType: 'application/json',
      });
    const control: QuestionControl = { n: q.n, approve: (id, reason) => decide(id, true, reason), deny: (id, reason) => decide(id, false, reason) };
    let answered: AnalysisQuestion | undefined;
    for await (const ev of followAgent(this.t, `${base}/questions/${q.n}/events`, { signal, timeoutMs })) {
      if (ev.type === 'answer') answered = ev.question;
      await onEvent?.(ev, control);
    }
    // resumed after the answer event: the question as it ended holds it
    answered ??= await this.t.json<AnalysisQuestion>({ signal, timeoutMs, method: 'GET', path: `${base}/questions/${q.n}` });
    return new Answer(answered, (name) => this.t.bytes({ signal, method: 'GET', path: `${base}/files/${escapePath(name)}`, query: { question: q.n } }));
  }

  /** close ends the analysis and its session; one already closed (by this handle, or expired) is no error. */
  async close(opts?: RequestOptions): Promise<void> {
    if (this.closed) return;
    try {
      await this.t.discard({ ...opts, method: 'DELETE', path: await this.path() });
    } catch (err) {
      if (!(err instanceof SessionClosedError)) throw err;
    }
    this.closed = true;
  }

  private async path(): Promise<string> {
    return `/v1/analyses/${encodeURIComponent((await this.created).id)}`;
  }
}

// An Analysis is closed at the end of an `await using` block.
defineAsyncDispose(Analysis.prototype);

/** The declaration of [Symbol.asyncDispose], which defineAsyncDispose adds where the runtime has the symbol. */
export interface Analysis {
  [Symbol.asyncDispose](): Promise<void>;
}

/** analysisForm is the multipart body of POST /v1/analyses. */
export function analysisForm(datasets: DatasetInput[], opts: AnalyzeOptions): FormData {
  const form = new FormData();
  if (opts.image) form.append('image', opts.image);
  if (opts.limits) form.append('limits', JSON.stringify(opts.limits));
  for (const d of datasets) {
    const blob = d.content instanceof Blob ? d.content : new Blob([d.content as BlobPart]);
    form.append('datasets', blob, d.name);
  }
  return form;
}
