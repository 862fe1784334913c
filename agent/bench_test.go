package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// instantModel is a scripted model (no LLM runs here) that answers at
// once: it fails once, fixes the code, answers, and approves as verifier.
type instantModel struct {
	planned bool
	turn    int
}

func (m *instantModel) Name() string { return "scripted:instant" }

func (m *instantModel) Complete(_ context.Context, req llm.Request) (llm.Reply, error) {
	usage := llm.Usage{InputTokens: 10, OutputTokens: 5}
	if len(req.Tools) == 0 { // the planner first, the verifier after
		if !m.planned {
			m.planned = true
			return llm.Reply{Text: "CODE", Usage: usage}, nil
		}
		return llm.Reply{Text: `{"ok": true, "reason": "the output is the answer"}`, Usage: usage}, nil
	}
	m.turn++
	call := func(name, args string) llm.Reply {
		return llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c" + name, Name: name, Arguments: json.RawMessage(args)}}, Usage: usage}
	}
	switch m.turn {
	case 1:
		return call("execute_code", `{"code": "print(undefined)"}`), nil
	case 2:
		return call("execute_code", `{"code": "print(42)"}`), nil
	}
	return call("final_answer", `{"answer": "42"}`), nil
}

// instantSandbox runs nothing: a NameError for code mentioning
// "undefined", else "42".
type instantSandbox struct{}

func (instantSandbox) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	return instantSession{}, nil
}

type instantSession struct{}

func (instantSession) ID() string { return "ses_instant" }
func (instantSession) Exec(_ context.Context, c sandbox.Cell) (sandbox.Result, error) {
	if strings.Contains(c.Code, "undefined") {
		return sandbox.Result{Status: sandbox.StatusError, ExitCode: 1, Error: &sandbox.ExecError{Type: "NameError", Message: "name 'undefined' is not defined", Line: 1, Traceback: "Traceback...\nNameError"}}, nil
	}
	return sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data("42\n")}, nil
}
func (instantSession) WriteFile(context.Context, string, []byte) error  { return nil }
func (instantSession) ReadFile(context.Context, string) ([]byte, error) { return nil, nil }
func (instantSession) ListFiles(context.Context) ([]sandbox.FileInfo, error) {
	return nil, nil
}
func (instantSession) Close() error { return nil }

// BenchmarkLoopOverhead measures the agent's own cost per iteration (one
// model call and what the loop does with its reply: parsing, feedback,
// bookkeeping, the trace), with a model and a sandbox that answer at
// once. A run has 5 model calls (plan, 3 coder turns, verify) and 2
// executions; ms_per_iteration divides the run's time by its model calls.
// Target: ≤ 2 ms.
func BenchmarkLoopOverhead(b *testing.B) {
	var total time.Duration
	calls := 0
	for b.Loop() {
		start := time.Now()
		trace, err := agent.Run(context.Background(), agent.Config{Model: &instantModel{}, Sandbox: instantSandbox{}}, agent.Task{Prompt: "What is 6*7?"})
		total += time.Since(start)
		if err != nil || trace.Status != agent.StatusAnswered {
			b.Fatalf("run: %v %+v", err, trace)
		}
		for _, s := range trace.Steps {
			if s.Reply != nil {
				calls++
			}
		}
	}
	b.ReportMetric(float64(total)/float64(calls)/1e6, "ms_per_iteration")
}
