package agent

import (
	"time"

	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Status says how an agent run ended.
type Status string

// The statuses of a Trace.
const (
	// StatusAnswered: the agent answered, its evidence accepted by the
	// verifier (unless Config.SkipVerify), or the planner answered a task
	// without files directly.
	StatusAnswered Status = "answered"
	// StatusUnverified: the agent answered with evidence, but the
	// verifier's verdict could not be read, even when asked again
	// (Trace.Reason): the answer, code and output are there, unchecked.
	StatusUnverified Status = "unverified"
	// StatusBudget: a budget ran out before an answer (Trace.Reason says
	// which).
	StatusBudget Status = "budget_exhausted"
	// StatusRefused: the model declined the task (Trace.Reason quotes it):
	// a provider's refusal, or a reply that says so in words.
	StatusRefused Status = "refused"
	// StatusDenied: a person refused an execution.
	StatusDenied Status = "denied"
	// StatusFailed: the model or the platform failed (Trace.Reason).
	StatusFailed Status = "failed"
)

// HasAnswer reports whether a run that ended with s has an answer:
// StatusAnswered or StatusUnverified.
func (s Status) HasAnswer() bool { return s == StatusAnswered || s == StatusUnverified }

// Trace is the record of an agent run: the outcome and every step.
type Trace struct {
	// ID links every step and execution of the run.
	ID     string `json:"id"`
	Task   string `json:"task"`
	Model  string `json:"model"`
	Status Status `json:"status"`
	// Reason explains a status other than answered (for unverified, why
	// the answer is).
	Reason string `json:"reason,omitempty"`
	// Answer is the final answer.
	Answer string `json:"answer,omitempty"`
	// Code, Output and Artifacts are the evidence: the code whose run
	// produced the answer, its output, and the files and figures it made.
	Code      string             `json:"code,omitempty"`
	Output    string             `json:"output,omitempty"`
	Artifacts []sandbox.Artifact `json:"artifacts,omitempty"`
	// Budget reports what was used against each budget.
	Budget BudgetUse `json:"budget"`
	Steps  []Step    `json:"steps"`
	// StartedAt and DurationMS time the run.
	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
}

// BudgetUse is what a run used, and its limits.
type BudgetUse struct {
	// Attempts is how many attempts were made, the last one included,
	// numbered as the progress events number them: the first is 1.
	Attempts int `json:"attempts"`
	// FailedAttempts is how many of them failed (an error, a rejected
	// answer, a repeated program, a reply cut at the token limit);
	// MaxAttempts of them end the run. An unreadable verdict is none.
	FailedAttempts int     `json:"failed_attempts"`
	MaxAttempts    int     `json:"max_attempts"`
	Tokens         int     `json:"tokens"`
	MaxTokens      int     `json:"max_tokens"`
	ExecMS         float64 `json:"exec_ms"`
	MaxExecMS      float64 `json:"max_exec_ms"`
	ArtifactBytes  int64   `json:"artifact_bytes"`
	MaxArtifact    int64   `json:"max_artifact_bytes"`
}

// StepKind names what a step did.
type StepKind string

// The kinds of step.
const (
	StepPlan     StepKind = "plan"     // the planner decided whether code is needed
	StepModel    StepKind = "model"    // a model call of the coder
	StepExecute  StepKind = "execute"  // the runner executed code
	StepTool     StepKind = "tool"     // a file tool (read, write, list)
	StepFeedback StepKind = "feedback" // structured feedback sent to the model
	StepVerify   StepKind = "verify"   // the verifier judged the output (Note: the verdict, or why it is unreadable)
)

// Step is one recorded step.
type Step struct {
	Kind    StepKind  `json:"kind"`
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	// Model calls: what was sent and what came back.
	Request *llm.Request `json:"request,omitempty"`
	Reply   *llm.Reply   `json:"reply,omitempty"`
	// Executions: the code and the sandbox's result.
	Code   string          `json:"code,omitempty"`
	Result *sandbox.Result `json:"result,omitempty"`
	// Note says what happened, in words.
	Note       string  `json:"note,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

// Event is progress reported while the agent works.
type Event struct {
	Kind    StepKind
	Attempt int
	Message string
}
