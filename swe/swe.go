// Package swe is the software-engineering agent: given a repository, a
// task in plain language and, optionally, a test command and the tests
// that must pass, a language model works on a copy of the repository in
// a sandbox session of its own with tools (bash, view, edit, search,
// run_tests, submit) and hands back a change as a unified diff.
//
// The verdict is never the agent's claim. After submit, a fresh sandbox
// applies the diff to a pristine copy of the repository (git apply, then
// patch --fuzz) and runs the tests there; the run is resolved only if
// every test that must pass does. A diff that edits the named tests is
// refused; edits to other test files are reported.
//
// The repository never touches the host's file system beyond the bytes
// the caller hands over: it is unpacked inside the sandbox (a tar, a
// gzip'd tar or a git bundle), so a hostile archive (absolute paths, ..,
// symlinks out, device files, a bomb) is the sandbox's problem, bounded
// by its disk and time limits, never the host's.
package swe

import (
	"context"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Budget defaults, used for zero fields of Config.
const (
	// DefaultMaxSteps bounds the model's turns.
	DefaultMaxSteps = 50
	// DefaultMaxTokens bounds the tokens of all model calls together.
	DefaultMaxTokens = 1_000_000
	// DefaultMaxWallTime bounds the whole run, verification included.
	DefaultMaxWallTime = 30 * time.Minute
	// DefaultCallTimeout bounds one tool call's execution in the sandbox
	// (a bash command, a test run).
	DefaultCallTimeout = 2 * time.Minute
)

// Size rules of the input, checked before anything runs.
const (
	// MaxRepoBytes caps the repository archive.
	MaxRepoBytes = 64 << 20
	// MaxTaskBytes caps the task's text.
	MaxTaskBytes = 64 << 10
	// MaxTests caps the number of named tests.
	MaxTests = 1000
)

// The repository and test-report types are the API's (api.Repo,
// api.TestReport...), so that the API's swe runs are made of them without
// the API's clients depending on this package; here they keep their names.
type (
	// Repo is the repository a task works on, as bytes (api.Repo).
	Repo = api.Repo
	// RepoFormat is how a repository's bytes are packed (api.RepoFormat).
	RepoFormat = api.RepoFormat
	// TestOutcome is one test's result (api.TestOutcome).
	TestOutcome = api.TestOutcome
	// TestCase is one test and its outcome (api.TestCase).
	TestCase = api.TestCase
	// TestReport is one run of the tests (api.TestReport).
	TestReport = api.TestReport
)

// The repository formats and test outcomes, as the API names them.
const (
	RepoTar     = api.RepoTar
	RepoBundle  = api.RepoBundle
	TestPassed  = api.TestPassed
	TestFailed  = api.TestFailed
	TestSkipped = api.TestSkipped
	TestMissing = api.TestMissing
)

// Task is what the agent is asked to do.
type Task struct {
	// Repo is the repository.
	Repo Repo
	// Prompt states the task in plain language, such as "fix the failing
	// test in test_x.py".
	Prompt string
	// TestCommand runs the repository's tests from its root, through
	// bash; "" means "python3 -m pytest -q" (pytest's per-test results
	// are then read from its JUnit XML report).
	TestCommand string
	// Tests name the tests that must pass after the change (pytest node
	// IDs such as "tests/test_x.py::test_y", or test files); empty means
	// every test the command runs must pass. When set, a change to the
	// files that hold them is refused.
	Tests []string
}

// Config configures a run.
type Config struct {
	// ID names the run in its trace and the records of its executions
	// (default: a new ID of an agent run).
	ID string
	// Model is the language model; Sandbox opens the agent's session and
	// the fresh sessions that verify its change, through the platform's
	// pipeline (records, limits, policy, redaction).
	Model   llm.Provider
	Sandbox sandbox.SessionRuntime
	// Image names the image the sessions run in ("" is the runtime's
	// default); it must have bash, git and patch (and pytest for the
	// default test command).
	Image string
	// SessionLimits are the sessions' limits (memory, disk, processes).
	SessionLimits sandbox.Limits
	// TextMode offers no native tools: the model writes its tool calls as
	// text (a JSON object, or a fenced bash block for bash).
	TextMode bool
	// MaxSteps, MaxTokens and MaxWallTime bound the run; CallTimeout one
	// tool call's execution. Zero takes the defaults above.
	MaxSteps    int
	MaxTokens   int
	MaxWallTime time.Duration
	CallTimeout time.Duration
	// Approve, if set, is asked before each bash command (and each test
	// run) executes; false ends the run with StatusDenied.
	Approve func(ctx context.Context, command string) (bool, error)
	// Redact, if set, is applied to everything shown to the model (tool
	// output, file contents) and kept in the trace.
	Redact func(string) string
	// OnEvent, if set, receives progress; it must return quickly.
	OnEvent func(Event)
	// testsBefore, if set, gives the tests on the pristine repository in
	// place of a run of them (Bench, whose BeforeCache runs them once per
	// task for every model it compares).
	testsBefore func(ctx context.Context) (*TestReport, error)
}

// Status says how a run ended.
type Status string

// The statuses of a Result.
const (
	// StatusResolved: the change, applied to a pristine copy in a fresh
	// sandbox, makes every test that must pass pass.
	StatusResolved Status = "resolved"
	// StatusUnresolved: the agent submitted a change that did not pass
	// verification (Reason and After say which tests failed, or that it
	// did not apply).
	StatusUnresolved Status = "unresolved"
	// StatusTestsEdited: the change edits a named test; it is refused and
	// not verified.
	StatusTestsEdited Status = "tests_edited"
	// StatusNoChange: the agent submitted an empty diff.
	StatusNoChange Status = "no_change"
	// StatusBudget: a budget (steps, tokens, wall time) ran out before a
	// submission; the diff so far is still reported and verified.
	StatusBudget Status = "budget_exhausted"
	// StatusLooping: the model repeated the same action with the same
	// result and was stopped.
	StatusLooping Status = "looping"
	// StatusRefused: the model declined the task.
	StatusRefused Status = "refused"
	// StatusDenied: a person refused a command.
	StatusDenied Status = "denied"
	// StatusFailed: the model or the platform failed (Reason).
	StatusFailed Status = "failed"
)

// Result is the outcome of a run.
type Result struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	// Reason explains the status in words.
	Reason string `json:"reason,omitempty"`
	// Diff is the change as a unified diff against the input (git's
	// format, paths a/ and b/ from the repository's root).
	Diff string `json:"diff"`
	// Before is the tests on the pristine repository; After the tests on
	// the pristine repository with Diff applied, in a fresh sandbox: the
	// verdict. After is nil when nothing was verified.
	Before *TestReport `json:"before,omitempty"`
	After  *TestReport `json:"after,omitempty"`
	// FailToPass and PassToPass are the named (else all) tests that
	// failed before and pass after, and that passed before and still
	// must; Broken are those that passed before and fail after.
	FailToPass []string `json:"fail_to_pass,omitempty"`
	PassToPass []string `json:"pass_to_pass,omitempty"`
	Broken     []string `json:"broken,omitempty"`
	// TestEdits are the test files the diff changes (named tests' files
	// refuse the change; others are reported).
	TestEdits []string `json:"test_edits,omitempty"`
	// Submitted says whether the model called submit.
	Submitted bool  `json:"submitted"`
	Trace     Trace `json:"trace"`
}

// Trace is the record of a run: every step, with the budgets used.
type Trace struct {
	Task   string    `json:"task"`
	Model  string    `json:"model"`
	Steps  []Step    `json:"steps"`
	Budget BudgetUse `json:"budget"`
	// StartedAt and DurationMS time the run.
	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
}

// BudgetUse is what a run used, and its limits.
type BudgetUse struct {
	Steps       int     `json:"steps"`
	MaxSteps    int     `json:"max_steps"`
	Tokens      int     `json:"tokens"`
	MaxTokens   int     `json:"max_tokens"`
	WallMS      float64 `json:"wall_ms"`
	MaxWallMS   float64 `json:"max_wall_ms"`
	ExecMS      float64 `json:"exec_ms"`
	CallTimeout float64 `json:"call_timeout_ms"`
}

// StepKind names what a step did.
type StepKind string

// The kinds of step.
const (
	StepSetup    StepKind = "setup"    // the repository unpacked, the tests run before
	StepModel    StepKind = "model"    // a model call
	StepTool     StepKind = "tool"     // a tool call (Tool, Args, Output)
	StepFeedback StepKind = "feedback" // a note sent to the model (a malformed call, prose, a repeat)
	StepSubmit   StepKind = "submit"   // the diff taken
	StepVerify   StepKind = "verify"   // the diff applied and tested in a fresh sandbox
)

// Step is one recorded step.
type Step struct {
	Kind StepKind  `json:"kind"`
	At   time.Time `json:"at"`
	// Model calls: what was sent and what came back. Request holds the
	// messages added since the previous model call (the first: the
	// system prompt and the task, with the tools offered), so that a
	// trace grows with the conversation, not with its square: the
	// conversation is the steps' requests and replies in order (older
	// tool results were sent shortened, as the loop says in them).
	Request *llm.Request `json:"request,omitempty"`
	Reply   *llm.Reply   `json:"reply,omitempty"`
	// Tool calls: the tool, its arguments and what it answered.
	Tool   string `json:"tool,omitempty"`
	Args   string `json:"args,omitempty"`
	Output string `json:"output,omitempty"`
	// Note says what happened, in words.
	Note       string  `json:"note,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

// Event is progress reported while the agent works.
type Event struct {
	Kind StepKind
	// Step numbers the model's turn, from 1 (0 before the first).
	Step    int
	Message string
	// Output, for a tool call's execution, is a chunk of its output as
	// it comes (Stream says which).
	Output []byte
	Stream sandbox.Stream
}
