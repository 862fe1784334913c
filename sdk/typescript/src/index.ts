// @crucible-sandbox/sdk: the TypeScript SDK of Crucible's HTTP API.

export { Crucible } from './client.js';
export type { AgentRunOptions, CrucibleOptions, ListRunsOptions, RunOptions, SessionOptions } from './client.js';
export { AgentRun } from './agentruns.js';
export type { AgentEvent } from './agentruns.js';
export { Analysis, Answer, Chart } from './analyses.js';
export type { AnalyzeOptions, AskOptions, DatasetInput, QuestionControl, Table } from './analyses.js';
export { Artifact } from './artifact.js';
export {
  APIError,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  ConnectionTimeoutError,
  CrucibleError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  SessionClosedError,
  ValidationError,
} from './errors.js';
export type { ErrorBody, ErrorCode } from './errors.js';
export type { RequestOptions } from './http.js';
export { RunResult } from './runs.js';
export type { DisplayOutput, RunEvent } from './runs.js';
export { Session } from './sessions.js';
export type { ExecOptions, SessionFiles } from './sessions.js';
export { OpenAITool } from './tool.js';
export type { ContentPart, OpenAIToolDefinition, ToolOptions, ToolOutput, ToolReplyMessage } from './tool.js';
export type * from './types.js';
export type { components, operations, paths } from './openapi.js';
