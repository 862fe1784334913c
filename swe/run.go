package swe

import (
	"context"
	"fmt"
	"time"

	"github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxCallTimeout is the longest a tool call may be given: a cell's
// longest timeout.
const maxCallTimeout = time.Hour

// validate checks the configuration's fields (Model and Sandbox set,
// budgets not negative, the call timeout within a cell's).
func (c *Config) validate() error {
	switch {
	case c.Model == nil:
		return &sandbox.InputError{Field: "model", Rule: "must be set (a language model)"}
	case c.Sandbox == nil:
		return &sandbox.InputError{Field: "sandbox", Rule: "must be set (a session runtime)"}
	case c.MaxSteps < 0:
		return &sandbox.InputError{Field: "max_steps", Rule: fmt.Sprintf("must not be negative (0 takes %d), got %d", DefaultMaxSteps, c.MaxSteps)}
	case c.MaxTokens < 0:
		return &sandbox.InputError{Field: "max_tokens", Rule: fmt.Sprintf("must not be negative (0 takes %d), got %d", DefaultMaxTokens, c.MaxTokens)}
	case c.MaxWallTime < 0:
		return &sandbox.InputError{Field: "max_wall_ms", Rule: fmt.Sprintf("must not be negative (0 takes %s), got %s", DefaultMaxWallTime, c.MaxWallTime)}
	case c.CallTimeout < 0 || c.CallTimeout > maxCallTimeout:
		return &sandbox.InputError{Field: "call_timeout", Rule: fmt.Sprintf("must be between 0 (%s) and %s, got %s", DefaultCallTimeout, maxCallTimeout, c.CallTimeout)}
	}
	return nil
}

// withDefaults fills the zero budgets.
func (c *Config) withDefaults() {
	if c.MaxSteps == 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.MaxWallTime == 0 {
		c.MaxWallTime = DefaultMaxWallTime
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.ID == "" {
		c.ID = ids.New(ids.AgentRun)
	}
}

// verifyReserve is the part of the wall-time budget kept for taking and
// verifying the diff after the loop: the loop's own deadline comes that
// much earlier, so a model that never submits still has its change
// verified within MaxWallTime.
func verifyReserve(c Config) time.Duration {
	return min(c.CallTimeout+30*time.Second, c.MaxWallTime/3)
}

// Run carries out task: the repository unpacked in a session of its own,
// the tests run on the pristine copy (in a fresh sandbox, while the model
// is first asked), the model's turns with the tools until it submits or a
// budget runs out, then the diff taken and verified in a fresh sandbox.
// The Result's status is the verification's verdict, never the model's
// claim.
//
// Bad input (the task, the repository, the configuration) is an
// *sandbox.InputError naming the field and the rule, returned before
// anything runs. The error is otherwise non-nil only when the run could
// not be carried out at all (no session); a run that failed is reported
// in the Result.
func Run(ctx context.Context, cfg Config, task Task) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := task.Validate(); err != nil {
		return nil, err
	}
	cfg.withDefaults()
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.MaxWallTime)
	defer cancel()

	l := &loop{cfg: cfg, task: task, history: map[string][]fileVersion{}, repeats: map[string]int{}, warned: map[string]bool{}}
	l.res = &Result{ID: cfg.ID, Trace: Trace{Task: l.redact(task.Prompt), Model: cfg.Model.Name(), StartedAt: started.UTC(),
		Budget: BudgetUse{MaxSteps: cfg.MaxSteps, MaxTokens: cfg.MaxTokens, MaxWallMS: millis(cfg.MaxWallTime), CallTimeout: millis(cfg.CallTimeout)}}}
	defer func() {
		l.res.Trace.DurationMS = millis(time.Since(started))
		l.res.Trace.Budget.WallMS = l.res.Trace.DurationMS
	}()

	l.emit(StepSetup, "opening the workspace")
	setup := time.Now()
	ws, err := openWorkspace(ctx, cfg, task.Repo)
	if err != nil {
		return nil, fmt.Errorf("swe: open the workspace: %w", err)
	}
	defer ws.close()
	l.ws = ws
	l.res.Trace.Steps = append(l.res.Trace.Steps, Step{Kind: StepSetup, At: setup.UTC(), Note: "repository unpacked in the agent's session", DurationMS: millis(time.Since(setup))})

	// The tests before run in a fresh sandbox of their own while the
	// model is first asked.
	before := make(chan verified, 1)
	if cfg.OnEvent != nil {
		cfg.OnEvent(Event{Kind: StepSetup, Message: "running the tests on the pristine repository"})
	}
	go func() {
		start := time.Now()
		var rep *TestReport
		var err error
		if cfg.testsBefore != nil {
			rep, err = cfg.testsBefore(ctx)
		} else {
			rep, err = Verify(ctx, cfg, task, "")
		}
		before <- verified{rep, err, start, time.Since(start)}
	}()

	loopCtx, cancelLoop := context.WithDeadlineCause(ctx, started.Add(cfg.MaxWallTime-verifyReserve(cfg)), errWallTime)
	end := l.work(loopCtx)
	cancelLoop()
	l.finish(ctx, end, before)
	return l.res, nil
}

// verified is a run of Verify.
type verified struct {
	rep   *TestReport
	err   error
	start time.Time
	took  time.Duration
}

// finish takes the diff and settles the status: a submission's is the
// verification's verdict; a run that ended otherwise keeps its status,
// with its change so far still verified when a budget ran out or the
// model looped.
func (l *loop) finish(ctx context.Context, end *ending, beforeCh <-chan verified) {
	res := l.res
	res.Submitted = end.submitted
	res.Status, res.Reason = end.status, end.reason

	if ctx.Err() != nil {
		// Cancelled by the caller (or out of wall time): nothing more runs.
		res.Reason += "; the change was not taken: " + context.Cause(ctx).Error()
		return
	}
	l.emit(StepSubmit, "taking the diff")
	start := time.Now()
	diff, err := l.ws.diff(ctx)
	l.res.Trace.Steps = append(l.res.Trace.Steps, Step{Kind: StepSubmit, At: start.UTC(), Note: fmt.Sprintf("diff taken: %d bytes", len(diff)), DurationMS: millis(time.Since(start))})
	if err != nil {
		res.Status, res.Reason = StatusFailed, "the diff could not be taken: "+err.Error()
		return
	}
	res.Diff = diff
	edited, refused := testEdits(diff, l.task.Tests)
	res.TestEdits = edited

	b := <-beforeCh
	l.res.Trace.Steps = append(l.res.Trace.Steps, Step{Kind: StepVerify, At: b.start.UTC(), Note: "the tests on the pristine repository" + errNote(b.err), DurationMS: millis(b.took)})
	if b.rep != nil {
		res.Before = l.redactReport(b.rep)
	}

	verify := end.submitted || end.status == StatusBudget || end.status == StatusLooping
	switch {
	case !verify:
		return
	case refused:
		res.Status, res.Reason = StatusTestsEdited, fmt.Sprintf("the change edits the named tests' files (%v): refused, not verified", edited)
		if !end.submitted {
			res.Status, res.Reason = end.status, end.reason+"; the change so far edits the named tests' files, so it was not verified"
		}
		return
	case diff == "":
		if end.submitted {
			res.Status, res.Reason = StatusNoChange, "the model submitted no change"
		}
		return
	case b.err != nil:
		reason := "the tests could not run on the pristine repository, so nothing can be judged: " + b.err.Error()
		if end.submitted {
			res.Status, res.Reason = StatusFailed, reason
		} else {
			res.Reason = end.reason + "; " + reason
		}
		return
	}
	l.emit(StepVerify, "verifying the change in a fresh sandbox")
	start = time.Now()
	after, err := Verify(ctx, l.cfg, l.task, diff)
	l.res.Trace.Steps = append(l.res.Trace.Steps, Step{Kind: StepVerify, At: start.UTC(), Note: "the change applied to a pristine copy and tested" + errNote(err), DurationMS: millis(time.Since(start))})
	if err != nil {
		res.Status, res.Reason = StatusFailed, "the change could not be verified: "+err.Error()
		return
	}
	res.After = l.redactReport(after)
	status, reason, f2p, p2p, broken := judge(l.task, b.rep, after)
	res.FailToPass, res.PassToPass, res.Broken = f2p, p2p, broken
	if end.submitted {
		res.Status, res.Reason = status, reason
	} else {
		res.Reason = fmt.Sprintf("%s; the change so far, verified: %s (%s)", end.reason, status, reason)
	}
	l.emit(StepVerify, string(res.Status))
}

// errNote is ": " and the error, or "".
func errNote(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// redactReport returns a copy of rep with its output redacted.
func (l *loop) redactReport(rep *TestReport) *TestReport {
	c := *rep
	c.Output = l.redact(c.Output)
	return &c
}
