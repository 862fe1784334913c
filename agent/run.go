package agent

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// run is one agent run in progress.
type run struct {
	cfg      Config
	trace    *Trace
	sess     sandbox.Session
	messages []llm.Message
	ran      map[string]int // code digest → the attempt that ran it
	lastErr  string         // fingerprint of the last failure
	// lastFailure says in a few words why the last execution failed.
	lastFailure string
	repeats     int        // how often lastErr happened in a row
	evidence    *execution // the last execution that succeeded
	restated    int        // answers Config.CheckAnswer refused
}

// execution is code and what running it gave.
type execution struct {
	code   string
	result sandbox.Result
}

// errBudget reports an exhausted budget; its text names the budget.
type errBudget struct{ what string }

func (e *errBudget) Error() string { return e.what + " budget exhausted" }

// errDenied reports an execution a person refused.
var errDenied = errors.New("execution not approved")

func (r *run) emit(kind StepKind, format string, args ...any) {
	if r.cfg.OnEvent != nil {
		r.cfg.OnEvent(Event{Kind: kind, Attempt: r.trace.Budget.Attempts, Message: fmt.Sprintf(format, args...)})
	}
}

func (r *run) fail(reason string) *Trace {
	r.trace.Status, r.trace.Reason = StatusFailed, reason
	return r.trace
}

// call sends messages to the model, records the step and the tokens, and
// enforces the token budget.
func (r *run) call(ctx context.Context, kind StepKind, req llm.Request) (llm.Reply, error) {
	if r.trace.Budget.Tokens >= r.cfg.MaxTokens {
		return llm.Reply{}, &errBudget{"token"}
	}
	start := time.Now()
	reply, err := r.cfg.Model.Complete(ctx, req)
	step := Step{Kind: kind, Attempt: r.trace.Budget.Attempts, At: start.UTC(), Request: &req, DurationMS: ms(time.Since(start))}
	if err == nil {
		step.Reply = &reply
		r.trace.Budget.Tokens += reply.Usage.Total()
	} else {
		step.Note = "model error: " + err.Error()
	}
	r.trace.Steps = append(r.trace.Steps, step)
	return reply, err
}

func fileNames(files []sandbox.File) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = fmt.Sprintf("%s (%d bytes)", f.Name, len(f.Content))
	}
	return strings.Join(names, ", ")
}

// solve runs the coder loop until an answer or an exhausted budget.
func (r *run) solve(ctx context.Context, task Task) {
	system := coderPrompt
	if r.cfg.TextMode {
		system = coderTextPrompt
	}
	if r.cfg.TestDriven {
		system += testDrivenPrompt
	}
	if r.cfg.Instructions != "" {
		system += "\n\n" + r.cfg.Instructions
	}
	user := task.Prompt
	if len(task.Files) > 0 {
		user += "\n\nFiles in the working directory: " + fileNames(task.Files) + "."
	}
	r.messages = append([]llm.Message{{Role: llm.System, Content: system}}, task.History...)
	r.messages = append(r.messages, llm.Message{Role: llm.User, Content: user})
	for {
		err := r.turn(ctx)
		var budget *errBudget
		var refused *errRefused
		switch {
		case err == nil && r.trace.Status.HasAnswer():
			return
		case err == nil:
			continue
		case errors.As(err, &budget):
			r.trace.Status, r.trace.Reason = StatusBudget, err.Error()
		case errors.As(err, &refused):
			r.emit(StepModel, "the model refused")
			r.trace.Status, r.trace.Reason = StatusRefused, err.Error()
		case errors.Is(err, errDenied):
			r.trace.Status, r.trace.Reason = StatusDenied, err.Error()
		default:
			r.trace.Status, r.trace.Reason = StatusFailed, err.Error()
		}
		if r.evidence != nil && r.trace.Code == "" {
			r.trace.Code, r.trace.Output = r.evidence.code, string(r.evidence.result.Stdout)
		}
		return
	}
}

// turn makes one model call and acts on the reply.
func (r *run) turn(ctx context.Context) error {
	req := llm.Request{Messages: r.messages}
	if !r.cfg.TextMode {
		req.Tools = toolDefs
	}
	r.emit(StepModel, "asking the model")
	reply, err := r.call(ctx, StepModel, req)
	if err != nil {
		return err
	}
	if why, ok := refusal(reply); ok {
		return &errRefused{why}
	}
	if reply.Cut() {
		return r.cutTurn(reply)
	}
	if r.cfg.TextMode {
		return r.textTurn(ctx, reply)
	}
	return r.toolTurn(ctx, reply)
}

// cutTurn answers a reply cut at the token limit. Nothing in it is acted
// on, since its code or tool arguments may end mid-way: each tool call is
// answered (the API wants every call ID answered) and the model is asked
// for a shorter reply. It counts as a failed attempt, as an unusable
// reply does, so a model that always runs long cannot loop.
func (r *run) cutTurn(reply llm.Reply) error {
	r.messages = append(r.messages, llm.Message{Role: llm.Assistant, Content: reply.Text, ToolCalls: reply.ToolCalls})
	r.feedback(cutNote)
	for _, tc := range reply.ToolCalls {
		r.messages = append(r.messages, llm.Message{Role: llm.ToolRole, ToolCallID: tc.ID, Content: cutNote})
	}
	if len(reply.ToolCalls) == 0 {
		r.messages = append(r.messages, llm.Message{Role: llm.User, Content: cutNote})
	}
	return r.failAttempt()
}

// failAttempt counts a failed attempt and enforces the attempts budget.
func (r *run) failAttempt() error {
	b := &r.trace.Budget
	b.FailedAttempts++
	if b.FailedAttempts >= b.MaxAttempts {
		return &errBudget{"attempts"}
	}
	b.Attempts = b.FailedAttempts + 1
	return nil
}

// feedback records structured feedback sent to the model and reports why
// the agent retries.
func (r *run) feedback(note string) {
	r.trace.Steps = append(r.trace.Steps, Step{Kind: StepFeedback, Attempt: r.trace.Budget.FailedAttempts, At: time.Now().UTC(), Note: note})
	why := firstLine(note)
	if r.lastFailure != "" {
		why, r.lastFailure = r.lastFailure, ""
	}
	r.emit(StepFeedback, "retrying because %s", why)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// execute runs code in the session, after the loop check and approval,
// and returns the result and the text to show the model. failed reports
// whether the attempt counts as failed.
func (r *run) execute(ctx context.Context, code string) (res sandbox.Result, report string, failed bool, err error) {
	digest := fmt.Sprintf("%x", sha256.Sum256([]byte(strings.TrimSpace(code))))
	if n, seen := r.ran[digest]; seen {
		return res, fmt.Sprintf("You already ran exactly this code (attempt %d). Running it again would give the same result: change the code.", n), true, nil
	}
	r.ran[digest] = r.trace.Budget.Attempts
	remaining := time.Duration(r.trace.Budget.MaxExecMS-r.trace.Budget.ExecMS) * time.Millisecond
	if remaining <= 0 {
		return res, "", false, &errBudget{"execution time"}
	}
	if r.cfg.Approve != nil {
		ok, aerr := r.cfg.Approve(ctx, code)
		if aerr != nil {
			return res, "", false, aerr
		}
		if !ok {
			return res, "", false, errDenied
		}
	}
	timeout := min(r.cfg.CellTimeout, remaining)
	r.emit(StepExecute, "running the code")
	start := time.Now()
	res, err = r.sess.Exec(ctx, sandbox.Cell{Code: code, TimeoutMS: max(timeout.Milliseconds(), 1)})
	r.trace.Budget.ExecMS += ms(time.Since(start))
	r.trace.Steps = append(r.trace.Steps, Step{Kind: StepExecute, Attempt: r.trace.Budget.Attempts, At: start.UTC(), Code: code, Result: &res, DurationMS: ms(time.Since(start))})
	if err != nil {
		return res, "", false, fmt.Errorf("sandbox: %w", err)
	}
	for _, a := range res.Artifacts {
		r.trace.Budget.ArtifactBytes += a.Size
	}
	r.emit(StepExecute, "status %s", res.Status)
	if r.trace.Budget.ArtifactBytes > r.cfg.MaxArtifactBytes {
		return res, "", false, &errBudget{"artifact bytes"}
	}
	if res.Status == sandbox.StatusOK {
		r.evidence = &execution{code: code, result: res}
		r.lastErr, r.repeats = "", 0
		return res, describe(res), false, nil
	}
	return res, r.failureFeedback(code, res), true, nil
}

// assertRE finds an assert statement in Python code.
var assertRE = regexp.MustCompile(`(?m)^\s*assert\b`)

// digits normalises numbers out of error messages, so that "index 5" and
// "index 7" count as the same error.
var digits = regexp.MustCompile(`[0-9]+`)

// failureFeedback describes a failed execution for the model: what
// happened, the traceback, the failing code, and what to do.
func (r *run) failureFeedback(code string, res sandbox.Result) string {
	fingerprint := string(res.Status)
	if res.Error != nil {
		fingerprint += ":" + res.Error.Type + ":" + digits.ReplaceAllString(res.Error.Message, "#")
	}
	r.lastFailure = string(res.Status)
	if res.Error != nil {
		r.lastFailure = res.Error.Type + ": " + res.Error.Message
	} else if res.Reason != "" {
		r.lastFailure += " (" + res.Reason + ")"
	}
	if fingerprint == r.lastErr {
		r.repeats++
	} else {
		r.lastErr, r.repeats = fingerprint, 1
	}
	var b strings.Builder
	b.WriteString(describe(res))
	b.WriteString("\n\nThe code that failed:\n```python\n" + code + "\n```\n")
	switch res.Status {
	case sandbox.StatusTimeout, sandbox.StatusCPULimit:
		b.WriteString(timeoutAdvice)
	case sandbox.StatusMemoryLimit:
		b.WriteString(memoryAdvice)
	case sandbox.StatusBlocked:
		b.WriteString(policyAdvice)
	default:
		b.WriteString(fixAdvice)
	}
	if r.repeats >= 2 {
		b.WriteString("\n\n" + stepBackAdvice)
	}
	return b.String()
}

// describe renders a sandbox result for the model.
func describe(res sandbox.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s", res.Status)
	if res.Reason != "" {
		fmt.Fprintf(&b, " (%s)", res.Reason)
	}
	if out := clip(string(res.Stdout), 8000); out != "" {
		b.WriteString("\nstdout:\n" + out)
	}
	if res.Value != "" {
		b.WriteString("\nvalue of the last expression: " + clip(res.Value, 2000))
	}
	if e := res.Error; e != nil {
		fmt.Fprintf(&b, "\nerror: %s: %s", e.Type, e.Message)
		if e.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", e.Line)
		}
		if e.Hint != "" {
			b.WriteString("\nhint: " + e.Hint)
		}
		if e.Traceback != "" {
			b.WriteString("\ntraceback:\n" + clip(e.Traceback, 4000))
		}
	} else if errOut := clip(string(res.Stderr), 4000); errOut != "" {
		b.WriteString("\nstderr:\n" + errOut)
	}
	for _, a := range res.Artifacts {
		fmt.Fprintf(&b, "\nartifact: %s (%s, %d bytes)", a.Name, a.MIME, a.Size)
	}
	if p := res.Policy; p != nil && len(res.Findings) > 0 {
		fmt.Fprintf(&b, "\ncode policy (%s, %s) findings:", p.Mode, p.Preset)
		for _, f := range res.Findings {
			b.WriteString("\n- " + f.String())
		}
	}
	return b.String()
}

func clip(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= n {
		return s
	}
	return s[:n/2] + "\n…[" + fmt.Sprint(len(s)-n) + " bytes cut]…\n" + s[len(s)-n/2:]
}

// answer checks a proposed answer and ends the run if it holds; otherwise
// it returns the feedback for the model.
func (r *run) answer(ctx context.Context, answer string) (string, error) {
	answer = strings.TrimSpace(answer)
	if r.evidence == nil {
		return "You answered without running code that supports the answer. Run code that computes it first.", r.failAttempt()
	}
	if r.cfg.TestDriven && !assertRE.MatchString(r.evidence.code) {
		return "Test-driven mode: the last successful execution ran no tests. Run the solution together with example and property tests (assert statements) first.", r.failAttempt()
	}
	if r.cfg.CheckAnswer != nil {
		if err := r.cfg.CheckAnswer(answer); err != nil {
			r.restated++
			note := "The answer's form is wrong: " + err.Error() + "\nRestate the answer (no need to run the code again)."
			if r.restated == 1 {
				return note, nil
			}
			return note, r.failAttempt()
		}
	}
	status := StatusAnswered
	if !r.cfg.SkipVerify {
		v, readable, err := r.verify(ctx, answer)
		switch {
		case err != nil:
			return "", err
		case !readable:
			// The verifier failed, not the code: no attempt is spent.
			status, r.trace.Reason = StatusUnverified, "the verifier's reply could not be read, twice"
		case !v.ok:
			return "A reviewer rejected the answer: " + v.reason + "\nFix the code or the answer.", r.failAttempt()
		}
	}
	r.trace.Status, r.trace.Answer = status, answer
	r.trace.Code, r.trace.Output = r.evidence.code, string(r.evidence.result.Stdout)
	r.trace.Artifacts = r.evidence.result.Artifacts
	return "", nil
}
