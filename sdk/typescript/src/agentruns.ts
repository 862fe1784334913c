// Agent runs: the server's code agent working on a task, its programs
// waiting for a person's approval when asked.

import type { RequestOptions, Transport } from './http.js';
import { readStream, type WireEvent } from './stream.js';
import type { AgentApproval, AgentCode, AgentDecision, AgentExecution, AgentRunInfo, AgentStep, AnalysisQuestion } from './types.js';

/**
 * AgentEvent is an event of an agent run (or of an analysis question, an
 * agent run too): its steps, a program waiting for approval (the moment
 * to call approve or deny), the programs and their output as they run,
 * and last its result, the run as it ended.
 */
export type AgentEvent =
  | { type: 'agent_run'; run: AgentRunInfo }
  | { type: 'step'; step: AgentStep }
  | { type: 'approval'; approval: AgentApproval }
  | { type: 'approval_decision'; decision: AgentDecision }
  | { type: 'code'; code: AgentCode }
  | { type: 'stdout' | 'stderr'; bytes: Uint8Array; text: string }
  | { type: 'execution'; execution: AgentExecution }
  | { type: 'answer'; question: AnalysisQuestion }
  | { type: 'result'; run: AgentRunInfo };

/** The names of the events AgentEvent carries besides output and the result, and the field each one's data goes to. */
const otherEvents = {
  agent_run: 'run',
  step: 'step',
  approval: 'approval',
  approval_decision: 'decision',
  code: 'code',
  execution: 'execution',
  answer: 'question',
} as const;

/**
 * followAgent follows the events at path (resumed after a dropped
 * connection as a run's are) and yields them as AgentEvents; events of
 * later versions of the API are skipped.
 */
export async function* followAgent(t: Transport, path: string, opts: RequestOptions = {}): AsyncGenerator<AgentEvent, void> {
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  const events: AsyncIterable<WireEvent> = readStream(t, { ...opts, method: 'GET', path }, { resumable: true, runResult: false });
  for await (const ev of events) {
    switch (ev.kind) {
      case 'output':
        yield { type: ev.stream, bytes: ev.bytes, text: decoders[ev.stream].decode(ev.bytes, { stream: true }) };
        break;
      case 'result':
        yield { type: 'result', run: ev.data as AgentRunInfo };
        break;
      case 'other':
        if (Object.hasOwn(otherEvents, ev.name)) {
          const name = ev.name as keyof typeof otherEvents;
          yield { type: name, [otherEvents[name]]: ev.data } as AgentEvent;
        }
        break;
    }
  }
}

/**
 * AgentRun is a handle on an agent run: follow it with events(), decide
 * its approvals with approve() and deny(), and have its end with wait().
 *
 *     const run = await crucible.agentRun('sum data.csv', { approve: true, files });
 *     for await (const ev of run.events()) {
 *       if (ev.type === 'approval') await run.approve(ev.approval.id);
 *     }
 *     const done = await run.wait(); // done.status, done.answer
 */
export class AgentRun {
  /** The agent run's ID ("agt_…"). */
  readonly id: string;
  private readonly path: string;
  private final: AgentRunInfo | undefined;

  constructor(
    private readonly t: Transport,
    /** The run as the server described it when it started. */
    readonly info: AgentRunInfo,
  ) {
    this.id = info.id;
    this.path = `/v1/agent-runs/${encodeURIComponent(info.id)}`;
  }

  /**
   * events yields the run's events from its start (a run that already
   * ended is replayed without its output), ending with the result. A
   * dropped connection is resumed with Last-Event-ID.
   */
  async *events(opts?: RequestOptions): AsyncGenerator<AgentEvent, void> {
    for await (const ev of followAgent(this.t, `${this.path}/events`, opts)) {
      if (ev.type === 'result') this.final = ev.run;
      yield ev;
    }
  }

  /** wait follows the run to its end and returns it as it ended (status, answer, reason, trace). */
  async wait(opts?: RequestOptions): Promise<AgentRunInfo> {
    if (this.final) return this.final;
    for await (const ev of this.events(opts)) {
      if (ev.type === 'result') return ev.run;
    }
    throw new Error(`crucible: the events of agent run ${this.id} ended without its result`);
  }

  /** approve lets the program waiting under approvalId run; an approval already decided is a ConflictError. */
  approve(approvalId: string, reason = '', opts?: RequestOptions): Promise<AgentDecision> {
    return this.decide(approvalId, true, reason, opts);
  }

  /** deny refuses the program waiting under approvalId: the run ends "denied"; reason is kept with the decision. */
  deny(approvalId: string, reason = '', opts?: RequestOptions): Promise<AgentDecision> {
    return this.decide(approvalId, false, reason, opts);
  }

  /** get returns the run as it stands now. */
  get(opts?: RequestOptions): Promise<AgentRunInfo> {
    return this.t.json<AgentRunInfo>({ ...opts, method: 'GET', path: this.path });
  }

  /** cancel stops the run and returns it once it ended ("cancelled", or as it ended before). */
  cancel(opts?: RequestOptions): Promise<AgentRunInfo> {
    return this.t.json<AgentRunInfo>({ ...opts, method: 'DELETE', path: this.path });
  }

  private decide(approvalId: string, approve: boolean, reason: string, opts?: RequestOptions): Promise<AgentDecision> {
    return this.t.json<AgentDecision>({
      ...opts,
      method: 'POST',
      path: `${this.path}/approvals/${encodeURIComponent(approvalId)}`,
      body: JSON.stringify(reason ? { approve, reason } : { approve }),
      contentType: 'application/json',
    });
  }
}
