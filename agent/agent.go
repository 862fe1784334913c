// Package agent is the code agent: a task in plain language becomes code
// (written by a language model), the code runs in a Crucible sandbox
// session, the agent reads the result, fixes its own errors, checks that
// the output answers the task, and returns the answer with its evidence.
// Every model call and execution is recorded in a Trace, and budgets
// (attempts, tokens, execution time, artifact bytes) bound the loop.
//
// Models do not always follow formats. The planner and the verifier ask
// for structured output where the provider has it and read a reply in
// prose, in a fence, after a <think> block or in plain words ("yes", "no,
// because ...") otherwise; a verdict that still cannot be read is asked
// for again once, then the answer is returned as StatusUnverified, never
// at the cost of an attempt. A reply cut at the token limit is not acted
// on; a refusal ends the run as StatusRefused.
package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Budget defaults, used for zero fields of Config.
const (
	DefaultMaxRetries       = 3
	DefaultMaxTokens        = 200_000
	DefaultMaxExecTime      = 5 * time.Minute
	DefaultMaxArtifactBytes = 64 << 20
	DefaultCellTimeout      = 60 * time.Second
)

// NoRetries, as Config.MaxRetries, allows the first attempt only (zero
// means DefaultMaxRetries).
const NoRetries = -1

// Config configures an agent run.
type Config struct {
	// ID names the run in its trace (default: a new NewRunID). Set it to
	// link what the run does elsewhere, such as the run records of its
	// executions, to its trace.
	ID string
	// Model writes the code; Sandbox runs it.
	Model   llm.Provider
	Sandbox sandbox.SessionRuntime
	// TextMode asks for code in fenced blocks instead of native tool
	// calls, for models without tool calling.
	TextMode bool
	// MaxRetries is how many failed attempts may follow the first one (a
	// failed execution, an unparseable reply, a reply cut at the token
	// limit, a repeated program, an answer the verifier rejected). A
	// verdict the verifier fails to give is none: it is asked again once,
	// then the answer is returned as StatusUnverified. Zero means
	// DefaultMaxRetries; NoRetries allows only the first attempt.
	MaxRetries int
	// MaxTokens bounds the tokens of all model calls together.
	MaxTokens int
	// MaxExecTime bounds the sandbox time of all executions together.
	MaxExecTime time.Duration
	// MaxArtifactBytes bounds the bytes of all artifacts produced.
	MaxArtifactBytes int64
	// CellTimeout bounds one execution.
	CellTimeout time.Duration
	// SessionLimits are the sandbox session's limits (memory, disk, ...).
	SessionLimits sandbox.Limits
	// TestDriven makes the coder write a reference solution with example
	// and property tests and run them before answering; an answer whose
	// supporting execution ran no assert is refused.
	TestDriven bool
	// SkipPlan skips the planner (every task gets code); SkipVerify skips
	// the verifier.
	SkipPlan, SkipVerify bool
	// Instructions, if set, are added to the coder's system prompt: what a
	// caller knows about the session (the data loaded in it, helpers
	// defined there) and how answers should look.
	Instructions string
	// CheckAnswer, if set, checks the form of a proposed answer on the
	// host before the verifier sees it (a format the task asks for). An
	// answer it refuses is sent back to the model with the error's text,
	// to restate it: the first refusal of a run costs no attempt (the
	// answer is there, only its form is wrong), each later one counts as
	// a failed attempt.
	CheckAnswer func(answer string) error
	// Approve, if set, is asked before every execution; false stops the
	// run with StatusDenied.
	Approve func(ctx context.Context, code string) (bool, error)
	// OnEvent, if set, receives progress.
	OnEvent func(Event)
}

// Task is what the agent is asked to do.
type Task struct {
	// Prompt states the task in plain language.
	Prompt string
	// Files are placed in the sandbox's working directory.
	Files []sandbox.File
	// History is the conversation so far (earlier tasks in the same
	// session and their answers), put before the task in the coder's
	// messages, after its system prompt.
	History []llm.Message
}

func (c *Config) withDefaults() {
	switch c.MaxRetries {
	case 0:
		c.MaxRetries = DefaultMaxRetries
	case NoRetries:
		c.MaxRetries = 0
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.MaxExecTime == 0 {
		c.MaxExecTime = DefaultMaxExecTime
	}
	if c.MaxArtifactBytes == 0 {
		c.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	if c.CellTimeout == 0 {
		c.CellTimeout = DefaultCellTimeout
	}
}

// Run carries out task and returns its trace. The error is non-nil only
// when the run could not be carried out at all (no session); a run that
// failed or ran out of budget is reported in the Trace.
func Run(ctx context.Context, cfg Config, task Task) (*Trace, error) {
	if cfg.Model == nil || cfg.Sandbox == nil {
		return nil, errors.New("agent: Config needs a Model and a Sandbox")
	}
	if strings.TrimSpace(task.Prompt) == "" {
		return nil, &sandbox.InputError{Field: "task", Rule: "must not be empty"}
	}
	if cfg.MaxRetries < NoRetries {
		return nil, &sandbox.InputError{Field: "max_retries", Rule: "must not be negative"}
	}
	if cfg.MaxTokens < 0 || cfg.MaxExecTime < 0 || cfg.MaxArtifactBytes < 0 {
		return nil, &sandbox.InputError{Field: "budgets", Rule: "must not be negative"}
	}
	cfg.withDefaults()
	if cfg.ID == "" {
		cfg.ID = NewRunID()
	}
	r := &run{cfg: cfg, ran: map[string]int{}}
	r.trace = &Trace{
		ID: cfg.ID, Task: task.Prompt, Model: cfg.Model.Name(), StartedAt: time.Now().UTC(),
		Budget: BudgetUse{Attempts: 1, MaxAttempts: cfg.MaxRetries + 1, MaxTokens: cfg.MaxTokens,
			MaxExecMS: ms(cfg.MaxExecTime), MaxArtifact: cfg.MaxArtifactBytes},
	}
	defer func() { r.trace.DurationMS = ms(time.Since(r.trace.StartedAt)) }()
	if !cfg.SkipPlan {
		direct, err := r.plan(ctx, task)
		var refused *errRefused
		switch {
		case errors.As(err, &refused):
			r.trace.Status, r.trace.Reason = StatusRefused, err.Error()
			return r.trace, nil
		case err != nil:
			return r.fail(err.Error()), nil
		}
		if direct != "" {
			r.trace.Status, r.trace.Answer = StatusAnswered, direct
			return r.trace, nil
		}
	}
	sess, err := cfg.Sandbox.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python, Files: task.Files, Limits: cfg.SessionLimits})
	if err != nil {
		return nil, fmt.Errorf("agent: start sandbox session: %w", err)
	}
	defer sess.Close()
	r.sess = sess
	r.solve(ctx, task)
	return r.trace, nil
}

// NewRunID returns a new random agent run ID (ids.AgentRun).
func NewRunID() string { return ids.New(ids.AgentRun) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
