package analyst

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// MaxQuestionBytes caps a question's size.
const MaxQuestionBytes = 64 << 10

// AskOptions configure how a question is answered.
type AskOptions struct {
	// Model writes the code and is required.
	Model llm.Provider
	// ID names the agent run in its trace (default: a new agent.NewRunID).
	ID string
	// TextMode asks for code in fenced blocks instead of tool calls.
	TextMode bool
	// Budgets, as agent.Config has them (zero: the agent's defaults;
	// MaxRetries agent.NoRetries allows only the first attempt).
	MaxRetries       int
	MaxTokens        int
	MaxExecTime      time.Duration
	MaxArtifactBytes int64
	CellTimeout      time.Duration
	// ProfileBudget is how many characters of the profile the model is
	// shown (Profile.ForModel; zero: DefaultModelBudget).
	ProfileBudget int
	// SkipVerify skips the verifier.
	SkipVerify bool
	// Approve, if set, is asked before each program runs; false ends the
	// question with agent.StatusDenied.
	Approve func(ctx context.Context, code string) (bool, error)
	// OnEvent, if set, receives progress, on the goroutine that calls Ask
	// except for EventOutput, which comes from the session's reader while
	// the code runs: it must return quickly and never block.
	OnEvent func(Event)
}

// Ask answers question with the agent, in the analysis's session: the
// DataFrames are loaded there, and the variables of earlier questions
// are still defined. The model is shown the analyst's instructions, the
// profile (within opt.ProfileBudget), and the conversation so far
// (bounded: HistoryTurns, HistoryBudget). A question that asks for a
// format (as "@mean_fare[value]") has the answer checked on the host: an
// answer without every token is sent back to be restated (the first time
// costs no attempt, later ones do). The planner is skipped: questions
// about data need code.
//
// Questions are answered one at a time; a second Ask waits for the
// first. The answer is added to the conversation, whatever its status.
// The error is an *sandbox.InputError for a bad question or options, and
// otherwise the platform's (the session failed); a question the agent
// could not answer is an Answer with its status and reason.
func (a *Analysis) Ask(ctx context.Context, question string, opt AskOptions) (*Answer, error) {
	switch {
	case strings.TrimSpace(question) == "":
		return nil, &sandbox.InputError{Field: "question", Rule: "must not be empty"}
	case len(question) > MaxQuestionBytes:
		return nil, &sandbox.InputError{Field: "question", Rule: fmt.Sprintf("must be at most %d bytes, got %d", MaxQuestionBytes, len(question))}
	case opt.Model == nil:
		return nil, &sandbox.InputError{Field: "model", Rule: "must be set"}
	}
	if err := a.lock(ctx); err != nil {
		return nil, err
	}
	defer a.unlock()
	if err := a.loadHelpers(ctx); err != nil {
		return nil, err
	}
	q := &questionSession{Session: a.Session, onEvent: opt.OnEvent, restore: a.restore}
	cfg := agent.Config{
		ID: opt.ID, Model: opt.Model, Sandbox: q, TextMode: opt.TextMode,
		MaxRetries: opt.MaxRetries, MaxTokens: opt.MaxTokens, MaxExecTime: opt.MaxExecTime,
		MaxArtifactBytes: opt.MaxArtifactBytes, CellTimeout: opt.CellTimeout,
		SkipPlan: true, SkipVerify: opt.SkipVerify, Approve: opt.Approve,
		Instructions: a.instructions(opt.ProfileBudget),
		OnEvent: func(e agent.Event) {
			q.setAttempt(e.Attempt)
			if ev, ok := agentEvent(e); ok {
				q.emit(ev)
			}
		},
	}
	if check := formatCheck(question); check != nil {
		cfg.CheckAnswer = check
	}
	trace, err := agent.Run(ctx, cfg, agent.Task{Prompt: question, History: a.history()})
	if err != nil {
		return nil, err
	}
	ans := q.answer(question, trace)
	a.remember(ans)
	q.emit(Event{Kind: EventAnswer, Attempt: trace.Budget.Attempts, Answer: ans})
	return ans, nil
}

// lock waits for the analysis's turn to answer a question, or ctx.
func (a *Analysis) lock(ctx context.Context) error {
	a.askOnce.Do(func() { a.asking = make(chan struct{}, 1) })
	select {
	case a.asking <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *Analysis) unlock() { <-a.asking }

// questionSession is the analysis's session as one question's agent run
// sees it: a SessionRuntime whose NewSession returns the session itself
// (no new session per question), whose Close leaves it open, and whose
// Exec reports the code, its output as it runs and its status, records
// the last value when it is a DataFrame, and keeps the helpers' records
// (under recordsDir) for the answer, out of what the model is shown.
type questionSession struct {
	sandbox.Session
	onEvent func(Event)
	// restore loads the datasets and helpers again once a cell ran the
	// interpreter out of memory and it was restarted (Analysis.restore).
	restore func(context.Context) error

	mu      sync.Mutex
	attempt int
	execs   []execution
}

// NewSession returns the analysis's session; req is ignored (the
// session, its files and limits, exist already).
func (q *questionSession) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	return q, nil
}

// Close leaves the session open: it is the analysis's.
func (q *questionSession) Close() error { return nil }

func (q *questionSession) setAttempt(n int) {
	q.mu.Lock()
	q.attempt = n
	q.mu.Unlock()
}

func (q *questionSession) emit(e Event) {
	if q.onEvent == nil {
		return
	}
	if e.Attempt == 0 {
		q.mu.Lock()
		e.Attempt = q.attempt
		q.mu.Unlock()
	}
	q.onEvent(e)
}

// Exec runs the agent's cell.
func (q *questionSession) Exec(ctx context.Context, cell sandbox.Cell) (sandbox.Result, error) {
	q.emit(Event{Kind: EventCode, Code: cell.Code})
	if q.onEvent != nil {
		cell.OnOutput = func(stream sandbox.Stream, chunk []byte) {
			q.emit(Event{Kind: EventOutput, Stream: stream, Text: string(chunk)})
		}
	}
	res, err := q.Session.Exec(ctx, cell)
	if err != nil {
		return res, err
	}
	if res.Restarted && q.restore != nil {
		if rerr := q.restore(ctx); rerr != nil {
			res.Reason += "; the datasets could not be loaded again (" + rerr.Error() + ")"
		} else {
			res.Reason += "; the datasets were loaded again into their DataFrames and the helpers defined again: only what the code itself defined is gone"
		}
	}
	if res.Status == sandbox.StatusOK && res.ValueHTML != "" {
		if v, verr := q.Session.Exec(ctx, sandbox.Cell{Code: valueTableCell, Unchecked: true}); verr == nil && v.Status == sandbox.StatusOK {
			res.Artifacts = append(res.Artifacts, v.Artifacts...)
		}
	}
	q.mu.Lock()
	q.execs = append(q.execs, execution{code: cell.Code, result: res})
	q.mu.Unlock()
	res.Artifacts = slices.DeleteFunc(slices.Clone(res.Artifacts), func(a sandbox.Artifact) bool {
		_, internal := recordKind(a.Name)
		return internal
	})
	q.emit(Event{Kind: EventStatus, Status: res.Status, Message: res.Reason, Result: &res})
	return res, nil
}

// answer builds the Answer of trace from what the executions produced:
// the tables and charts of the execution that produced the answer (the
// evidence), the files and cleaning summaries of every execution that
// succeeded.
func (q *questionSession) answer(question string, trace *agent.Trace) *Answer {
	ans := &Answer{
		Question: question, Status: trace.Status, Reason: trace.Reason, Text: trace.Answer,
		Code: trace.Code, Output: trace.Output, TraceID: trace.ID, Budget: trace.Budget, Trace: trace,
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	files := map[string]int{} // name → index in ans.Files
	for i, e := range q.execs {
		if e.result.Status != sandbox.StatusOK {
			continue
		}
		o := sortArtifacts(e.result.Artifacts)
		if trace.Code != "" && e.code == trace.Code && !slices.ContainsFunc(q.execs[i+1:], func(l execution) bool {
			return l.code == e.code && l.result.Status == sandbox.StatusOK
		}) {
			ans.Tables, ans.Charts = o.tables, o.charts
		}
		ans.Cleaning = append(ans.Cleaning, o.cleaning...)
		for _, f := range o.files {
			if j, ok := files[f.Name]; ok {
				ans.Files[j] = f
				continue
			}
			files[f.Name] = len(ans.Files)
			ans.Files = append(ans.Files, f)
		}
	}
	ans.Cleaning = ans.Cleaning[:min(len(ans.Cleaning), maxCleanings)]
	return ans
}
