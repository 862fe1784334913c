package api

import (
	"encoding/json"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// AgentRunRequest is the body of POST /v1/agent-runs: a task for the code
// agent, with its files and budgets. The model and its key are the
// server's; a request never names them. Zero budgets take the server's
// defaults; a budget above the server's maximum is refused, naming it.
type AgentRunRequest struct {
	// Task states the task in plain language.
	Task string `json:"task"`
	// Files are placed in the session's working directory.
	Files []sandbox.File `json:"files,omitempty"`
	// Image names the image the code runs in, among those the server
	// offers (GET /v1/images); "" is the server's default.
	Image string `json:"image,omitempty"`
	// Approve makes every program wait for a person's approval
	// (POST /v1/agent-runs/{id}/approvals/{approval_id}) before it runs.
	Approve bool `json:"approve,omitempty"`
	// TextMode asks the model for fenced code instead of tool calls, for
	// models without tool calling.
	TextMode bool `json:"text_mode,omitempty"`
	// TestDriven makes the model run a reference solution with example
	// and property tests before it answers.
	TestDriven bool `json:"test_driven,omitempty"`
	// MaxRetries is how many failed attempts may follow the first; absent
	// is the server's default, 0 allows the first attempt only.
	MaxRetries *int `json:"max_retries,omitempty"`
	// MaxTokens bounds the tokens of all the model's calls together.
	MaxTokens int `json:"max_tokens,omitempty"`
	// MaxExecMS bounds the execution time of all programs together.
	MaxExecMS int64 `json:"max_exec_ms,omitempty"`
	// CellTimeoutMS bounds one program's execution.
	CellTimeoutMS int64 `json:"cell_timeout_ms,omitempty"`
	// MaxArtifactBytes bounds the bytes of all artifacts produced.
	MaxArtifactBytes int64 `json:"max_artifact_bytes,omitempty"`
	// Limits are the session's limits (memory, disk, processes...),
	// within the server's maxima.
	Limits sandbox.Limits `json:"limits"`
	// Mode selects the agent: "code" (the default) or "swe".
	Mode AgentMode `json:"mode,omitempty"`
	// SWE is the input of a swe run: its repository, test command and
	// tests, and its budgets.
	SWERequest
}

// AgentRunStatus is where an agent run stands: AgentRunning or
// AgentAwaitingApproval while it goes on, then how it ended: one of the
// agent's statuses ("answered", "unverified", "budget_exhausted",
// "refused", "denied", "failed"), AgentCancelled or AgentInterrupted.
type AgentRunStatus string

// The statuses of an agent run that are not the agent's own.
const (
	// AgentRunning: the agent is working.
	AgentRunning AgentRunStatus = "running"
	// AgentAwaitingApproval: a program waits for a person's decision
	// (AgentRun.PendingApproval).
	AgentAwaitingApproval AgentRunStatus = "awaiting_approval"
	// AgentCancelled: DELETE /v1/agent-runs/{id} or the server's shutdown
	// stopped the run.
	AgentCancelled AgentRunStatus = "cancelled"
	// AgentInterrupted: the server stopped (a crash, a kill) while the
	// run was going on or waiting for an approval; the server that
	// started next ended it so, its Reason saying what it was doing.
	AgentInterrupted AgentRunStatus = "interrupted"
)

// Ended reports whether a run with status s has ended.
func (s AgentRunStatus) Ended() bool { return s != AgentRunning && s != AgentAwaitingApproval }

// AgentRun describes an agent run: the answer to POST /v1/agent-runs and
// GET /v1/agent-runs/{id}, an item of GET /v1/agent-runs (without its
// trace), and the first and last events of its stream.
type AgentRun struct {
	// ID names the run; the records of its executions carry it as
	// agent_run (GET /v1/runs?agent_run={id}).
	ID string `json:"id"`
	// Status is where the run stands.
	Status AgentRunStatus `json:"status"`
	// Task is the task, redacted like everything the server keeps.
	Task string `json:"task"`
	// Image names the image the code runs in.
	Image string `json:"image"`
	// Model names the server's model.
	Model string `json:"model"`
	// Reason explains an ended status other than answered.
	Reason string `json:"reason,omitempty"`
	// Answer is the final answer, once there is one.
	Answer string `json:"answer,omitempty"`
	// PendingApproval is the program waiting for a decision, while the
	// status is awaiting_approval.
	PendingApproval *AgentApproval `json:"pending_approval,omitempty"`
	// CreatedAt is when the run was accepted.
	CreatedAt time.Time `json:"created_at"`
	// FinishedAt is when it ended; nil before.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Mode is the agent: "code" or "swe".
	Mode AgentMode `json:"mode,omitempty"`
	// SWE is a swe run's change and tests, once it ended.
	SWE *SWEOutcome `json:"swe,omitempty"`
	// Trace is the agent's trace (every model call, execution and
	// verdict, with the budgets used) as JSON, once the run ended, in GET
	// /v1/agent-runs/{id} and the stream's result event. Every string in it is redacted;
	// artifacts come without their contents, which the records of the
	// executions serve (GET /v1/runs/{run}/artifacts/{name}).
	Trace json.RawMessage `json:"trace,omitempty"`
}

// AgentRunList is the answer to GET /v1/agent-runs: the caller's agent
// runs, newest first, without their traces, one page at a time.
type AgentRunList struct {
	// AgentRuns are the runs.
	AgentRuns []AgentRun `json:"agent_runs"`
	// Next is the cursor of the next page (GET /v1/agent-runs?cursor=),
	// empty on the last.
	Next string `json:"next,omitempty"`
}

// AgentStep is the data of a step event: the agent's progress, as the
// command line shows it.
type AgentStep struct {
	// Kind is the agent's step kind: plan, model, execute, tool,
	// feedback (a retry, Message says why) or verify.
	Kind string `json:"kind"`
	// Attempt numbers the attempt, from 1.
	Attempt int `json:"attempt"`
	// Message says what happens, in words.
	Message string `json:"message"`
}

// AgentCode is the data of a code event: a program about to run (after
// its approval, when approval is asked for), redacted.
type AgentCode struct {
	// Attempt numbers the attempt, from 1.
	Attempt int `json:"attempt"`
	// Code is the program.
	Code string `json:"code"`
}

// AgentExecution is the data of an execution event: how a program ended.
type AgentExecution struct {
	// Attempt numbers the attempt, from 1.
	Attempt int `json:"attempt"`
	// Status is the sandbox's status, such as "ok" or "error".
	Status sandbox.Status `json:"status"`
	// Reason explains a status other than ok or error.
	Reason string `json:"reason,omitempty"`
	// ExitCode is the program's exit code, -1 when it did not exit.
	ExitCode int `json:"exit_code"`
	// Error is the program's structured error, if it failed with one.
	Error *sandbox.ExecError `json:"error,omitempty"`
	// Artifacts describe the files it produced.
	Artifacts []ArtifactMeta `json:"artifacts,omitempty"`
}

// AgentApproval is a program waiting for a person's decision: the data
// of an approval event, and AgentRun.PendingApproval.
type AgentApproval struct {
	// ID names the approval in POST
	// /v1/agent-runs/{id}/approvals/{approval_id}.
	ID string `json:"id"`
	// Attempt numbers the attempt, from 1.
	Attempt int `json:"attempt"`
	// Code is the program, redacted.
	Code string `json:"code"`
	// RequestedAt is when the agent asked.
	RequestedAt time.Time `json:"requested_at"`
	// ExpiresAt is when the run ends denied if no one decides.
	ExpiresAt time.Time `json:"expires_at"`
}

// ApprovalRequest is the body of POST
// /v1/agent-runs/{id}/approvals/{approval_id}.
type ApprovalRequest struct {
	// Approve runs the program (true) or refuses it (false), which ends
	// the run denied. It is required.
	Approve *bool `json:"approve"`
	// Reason says why, for the trace and the events.
	Reason string `json:"reason,omitempty"`
}

// AgentDecision is a decision on an approval: the answer to POST
// /v1/agent-runs/{id}/approvals/{approval_id} and the data of an
// approval_decision event.
type AgentDecision struct {
	// ID names the approval.
	ID string `json:"id"`
	// Approved says whether the program may run.
	Approved bool `json:"approved"`
	// Reason is the reason given, or why the server decided.
	Reason string `json:"reason,omitempty"`
	// By is "api" for a person's decision, "timeout" when none came in
	// time, "cancel" when the run was cancelled meanwhile.
	By string `json:"by"`
	// DecidedAt is when.
	DecidedAt time.Time `json:"decided_at"`
}

// AgentEvent is one event of an agent run's stream other than output:
// exactly one field is set, the one of its event name (agent_run and
// result: Run; step: Step; code: Code; execution: Execution; approval:
// Approval; approval_decision: Decision; in the stream of an analysis's
// question, answer: Question and session_rebuilt: Rebuild). Output events
// carry a sandbox.Data, as a run's do.
type AgentEvent struct {
	Run       *AgentRun         `json:"run,omitempty"`
	Step      *AgentStep        `json:"step,omitempty"`
	Code      *AgentCode        `json:"code,omitempty"`
	Execution *AgentExecution   `json:"execution,omitempty"`
	Approval  *AgentApproval    `json:"approval,omitempty"`
	Decision  *AgentDecision    `json:"decision,omitempty"`
	Question  *AnalysisQuestion `json:"question,omitempty"`
	Rebuild   *AnalysisRebuild  `json:"rebuild,omitempty"`
}

// Data is the one field of e that is set, the event's data.
func (e AgentEvent) Data() any {
	switch {
	case e.Run != nil:
		return e.Run
	case e.Step != nil:
		return e.Step
	case e.Code != nil:
		return e.Code
	case e.Execution != nil:
		return e.Execution
	case e.Approval != nil:
		return e.Approval
	case e.Question != nil:
		return e.Question
	case e.Rebuild != nil:
		return e.Rebuild
	}
	return e.Decision
}
