// Names for the API's types, all generated from server/openapi.json into
// openapi.ts (npm run gen): the SDK adds no hand-written copy of a wire type.

import type { components } from './openapi.js';

/** Schemas holds every type of the API's OpenAPI document, by its name there. */
export type Schemas = components['schemas'];

/** A run request as the API takes it (POST /v1/runs). */
export type RunRequest = Schemas['Request'];
/** The answer to POST /v1/runs: the result with the record's id. */
export type RunResponse = Schemas['RunResponse'];
/** A run record (GET /v1/runs/{id}). */
export type RunRecord = Schemas['Run'];
/** How a run ended: ok, error, timeout, cpu_limit, memory_limit, output_limit, killed, blocked, internal. */
export type Status = Schemas['Status'];
/** Where a run record stands: Status, or queued, running, interrupted, lost. */
export type RunStatus = Schemas['RunStatus'];
/** The uncaught exception a program ended with, with the server's hint. */
export type ExecError = Schemas['ExecError'];
/** Measurements of a run: wall_ms, cpu_ms, peak_memory_bytes, queue_ms, start_ms. */
export type Metrics = Schemas['Metrics'];
/** What a run may consume (wall_time_ms, memory_bytes, ...). */
export type Limits = Schemas['Limits'];
/** A language as a request may name it ("python", "py", "js", "bash", ...). */
export type LanguageName = Schemas['LanguageName'];
/** The images the server offers (GET /v1/images). */
export type ImageList = Schemas['ImageList'];
/** An open session (GET /v1/sessions/{id}). */
export type SessionInfo = Schemas['SessionInfo'];
/** A file of a session's working directory. */
export type FileInfo = Schemas['FileInfo'];
/** An agent run as the API describes it. */
export type AgentRunInfo = Schemas['AgentRun'];
/** How an agent run stands or ended: running, awaiting_approval, answered, denied, failed, ... */
export type AgentRunStatus = Schemas['AgentRunStatus'];
/** A program of an agent run waiting for a decision. */
export type AgentApproval = Schemas['AgentApproval'];
/** A decision on an approval. */
export type AgentDecision = Schemas['AgentDecision'];
/** A step of an agent run: planning, a model call, an execution, a retry, verification. */
export type AgentStep = Schemas['AgentStep'];
/** A program about to run. */
export type AgentCode = Schemas['AgentCode'];
/** How a program of an agent run ended. */
export type AgentExecution = Schemas['AgentExecution'];
/** A data analysis and its profile. */
export type AnalysisInfo = Schemas['Analysis'];
/** A question of an analysis, with its answer once it ended. */
export type AnalysisQuestion = Schemas['AnalysisQuestion'];
/** The analyst's answer to a question. */
export type AnalysisAnswer = Schemas['AnalysisAnswer'];

/** A file to place in a sandbox's working directory: content as text or bytes. */
export interface FileInput {
  /** Path relative to the working directory, such as "data/in.csv". */
  name: string;
  content: string | Uint8Array;
  /** Sets the file's executable bits. */
  executable?: boolean;
  /** The program can read the file and never change it. */
  read_only?: boolean;
}
