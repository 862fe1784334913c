package swe

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// behaviour is one way a real model behaves, through the whole loop.
type behaviour struct {
	name  string
	wire  string
	cfg   Config
	turns []wireTurn
	// after answers every request past turns.
	after wireTurn
	task  func(t testing.TB) Task
	check func(t *testing.T, res *Result, m *wireModel)
}

func runBehaviours(t *testing.T, cases []behaviour) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newWireModel(t, cmpOr(tc.wire, wireOpenAI), tc.turns...)
			m.after = tc.after
			task := calcTask(t)
			if tc.task != nil {
				task = tc.task(t)
			}
			tc.check(t, runWith(t, m, tc.cfg, task), m)
		})
	}
}

// fixCall is the edit that fixes the tiny repository's bug.
var fixCall = toCall("edit", map[string]string{"command": "str_replace", "path": "calc.py",
	"old_str": "def subtract(a, b):\n    return a + b", "new_str": "def subtract(a, b):\n    return a - b"})

// wantStatus checks the status and, if reason is set, that the reason
// holds it.
func wantStatus(t *testing.T, res *Result, status Status, reason string) {
	t.Helper()
	if res.Status != status || !strings.Contains(res.Reason, reason) {
		t.Errorf("want status %s with a reason holding %q: %s", status, reason, describeResult(res))
	}
}

// The model's ways of going wrong, each handled: malformed arguments, prose
// (nudged, then stopped), a loop (warned, then stopped), no submission
// (the step budget; the change so far verified), refusals, a reply cut
// at the token limit.
func TestModelBehaviours(t *testing.T) {
	var cases []behaviour
	for _, wire := range []string{wireOpenAI, wireAnthropic} {
		cases = append(cases,
			behaviour{name: wire + ": malformed arguments get feedback, the run goes on", wire: wire, turns: []wireTurn{
				say(wireReply{Calls: []wireCall{{Name: "edit", Args: `{"command": "str_replace", "path": "calc.py", "old_str": "x`}}}),
				seeing(say(wireReply{Calls: []wireCall{fixCall}}), "not a valid JSON object"),
				callTool("submit", nil),
			}, check: func(t *testing.T, res *Result, m *wireModel) {
				wantStatus(t, res, StatusResolved, "")
				if res.Trace.Budget.Steps != 3 {
					t.Errorf("steps %d, want 3 (the malformed call counts)", res.Trace.Budget.Steps)
				}
				if n := countSteps(res, StepFeedback); n != 1 {
					t.Errorf("%d feedback steps, want 1: %s", n, describeResult(res))
				}
			}},
			behaviour{name: wire + ": prose is nudged, then a tool call goes on", wire: wire, turns: []wireTurn{
				prose("The bug is in subtract: it adds. I would change it to a - b."),
				seeing(say(wireReply{Calls: []wireCall{fixCall}}), "Call a tool", "submit"),
				callTool("submit", nil),
			}, check: func(t *testing.T, res *Result, m *wireModel) {
				wantStatus(t, res, StatusResolved, "")
			}},
			behaviour{name: wire + ": prose three times in a row stops the run", wire: wire, turns: []wireTurn{
				prose("I think the bug is in subtract."), prose("Yes, subtract adds."), prose("Done, it should work now."),
			}, check: func(t *testing.T, res *Result, m *wireModel) {
				wantStatus(t, res, StatusFailed, "3 replies in a row that called no tool")
				if res.Submitted || res.After != nil {
					t.Errorf("nothing to verify: %s", describeResult(res))
				}
			}},
			behaviour{name: wire + ": the same call with the same result is warned about, then stopped", wire: wire,
				after: callTool("bash", map[string]string{"command": "cat calc.py"}),
				turns: []wireTurn{
					callTool("bash", map[string]string{"command": "cat calc.py"}),
					callTool("bash", map[string]string{"command": "cat  calc.py"}), // another command: not a repeat
					callTool("bash", map[string]string{"command": "cat calc.py"}),
					callTool("bash", map[string]string{"command": "cat calc.py"}),
					seeing(callTool("bash", map[string]string{"command": "cat calc.py"}), "exactly this call 3 times"),
				}, check: func(t *testing.T, res *Result, m *wireModel) {
					wantStatus(t, res, StatusLooping, "the same bash call with the same result 4 times")
					if res.Trace.Budget.Steps != 5 || len(m.received()) != 5 {
						t.Errorf("steps %d, requests %d: want 5 (one warning, then the stop)", res.Trace.Budget.Steps, len(m.received()))
					}
				}},
			behaviour{name: wire + ": a model that never submits runs out of steps; its change is still verified", wire: wire,
				cfg:   Config{MaxSteps: 4},
				turns: []wireTurn{say(wireReply{Calls: []wireCall{fixCall}})},
				after: func(_ testing.TB, req *wireRequest) wireReply {
					// Always something new, so it is no loop.
					return wireReply{Calls: []wireCall{toCall("bash", map[string]string{"command": "echo " + strings.Repeat("x", len(req.Messages))})}}
				},
				check: func(t *testing.T, res *Result, m *wireModel) {
					wantStatus(t, res, StatusBudget, "step budget (4 model turns)")
					if res.Submitted || res.After == nil || res.After.ExitCode != 0 || !strings.Contains(res.Reason, "verified: resolved") || !strings.Contains(res.Diff, "+    return a - b") {
						t.Errorf("want the change so far taken and verified: %s", describeResult(res))
					}
					if len(m.received()) != 4 {
						t.Errorf("%d model calls, want 4", len(m.received()))
					}
				}},
			behaviour{name: wire + ": a reply cut at the token limit runs nothing", wire: wire, turns: []wireTurn{
				say(wireReply{Calls: []wireCall{{Name: "bash", Args: `{"command": "touch cut-marker"}`}}, Stop: map[string]string{wireOpenAI: "length", wireAnthropic: "max_tokens"}[wire]}),
				seeing(callTool("bash", map[string]string{"command": "ls"}), "cut off at the token limit"),
				seeing(callTool("submit", nil), "calc.py"),
			}, check: func(t *testing.T, res *Result, m *wireModel) {
				wantStatus(t, res, StatusNoChange, "")
				for _, s := range res.Trace.Steps {
					if s.Kind == StepTool && strings.Contains(s.Args, "cut-marker") {
						t.Errorf("the cut call ran: %s", describeResult(res))
					}
				}
			}},
			behaviour{name: wire + ": a refusal in prose", wire: wire, turns: []wireTurn{
				prose("I'm sorry, but I can't help with that request."),
			}, check: func(t *testing.T, res *Result, m *wireModel) {
				wantStatus(t, res, StatusRefused, "can't help")
			}},
		)
	}
	cases = append(cases,
		behaviour{name: "openai: the refusal field", turns: []wireTurn{say(wireReply{Refusal: "I will not modify this code."})},
			check: func(t *testing.T, res *Result, m *wireModel) { wantStatus(t, res, StatusRefused, "I will not modify") }},
		behaviour{name: "anthropic: stop_reason refusal", wire: wireAnthropic, turns: []wireTurn{say(wireReply{Text: "No.", Stop: "refusal"})},
			check: func(t *testing.T, res *Result, m *wireModel) { wantStatus(t, res, StatusRefused, "") }},
	)
	runBehaviours(t, cases)
}

// The budgets: tokens, wall time, one call's time; approvals and the
// submission's verdicts (no change, tests edited, unresolved).
func TestBudgetsAndVerdicts(t *testing.T) {
	var approved []string
	var mu sync.Mutex
	runBehaviours(t, []behaviour{
		{name: "token budget", cfg: Config{MaxTokens: 1000}, turns: []wireTurn{
			say(wireReply{Calls: []wireCall{fixCall}, In: 900, Out: 100}),
		}, check: func(t *testing.T, res *Result, m *wireModel) {
			wantStatus(t, res, StatusBudget, "token budget (1000)")
			if res.Trace.Budget.Tokens != 1000 || res.After == nil {
				t.Errorf("want 1000 tokens used and the change verified: %s", describeResult(res))
			}
		}},
		{name: "one call's time", cfg: Config{CallTimeout: 2 * time.Second}, turns: []wireTurn{
			callTool("bash", map[string]string{"command": "echo started; sleep 30; echo never"}),
			seeing(callTool("bash", map[string]string{"command": "pgrep -c sleep || true"}), "stopped after 2s", "started"),
			seeing(callTool("submit", nil), "output:\n0"), // the sleep's process group was killed
		}, check: func(t *testing.T, res *Result, m *wireModel) {
			wantStatus(t, res, StatusNoChange, "")
			if res.Trace.Budget.ExecMS > 15000 {
				t.Errorf("exec time %.0f ms: the sleep was not stopped", res.Trace.Budget.ExecMS)
			}
		}},
		{name: "wall time", cfg: Config{MaxWallTime: 12 * time.Second, CallTimeout: 60 * time.Second},
			turns: []wireTurn{say(wireReply{Calls: []wireCall{fixCall}}), callTool("bash", map[string]string{"command": "sleep 60"})},
			check: func(t *testing.T, res *Result, m *wireModel) {
				wantStatus(t, res, StatusBudget, "wall-time budget")
				if res.Trace.DurationMS > 12000 {
					t.Errorf("the run took %.0f ms, over its 12 s", res.Trace.DurationMS)
				}
			}},
		{name: "approval asked for each command; a refusal ends the run",
			cfg: Config{Approve: func(_ context.Context, cmd string) (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				approved = append(approved, cmd)
				return !strings.Contains(cmd, "rm "), nil
			}},
			turns: []wireTurn{
				callTool("bash", map[string]string{"command": "ls"}),
				callTool("run_tests", nil),
				callTool("bash", map[string]string{"command": "rm -rf /work/repo"}),
			}, check: func(t *testing.T, res *Result, m *wireModel) {
				wantStatus(t, res, StatusDenied, "rm -rf /work/repo")
				if strings.Join(approved, "|") != "ls|"+defaultTestCommand+"|rm -rf /work/repo" {
					t.Errorf("approvals asked: %q", approved)
				}
			}},
		{name: "an approver's failure fails the run", cfg: Config{Approve: func(context.Context, string) (bool, error) { return false, errors.New("approver gone") }},
			turns: []wireTurn{callTool("bash", map[string]string{"command": "ls"})},
			check: func(t *testing.T, res *Result, m *wireModel) { wantStatus(t, res, StatusFailed, "approver gone") }},
		{name: "submit with no change", turns: []wireTurn{callTool("submit", nil)},
			check: func(t *testing.T, res *Result, m *wireModel) {
				wantStatus(t, res, StatusNoChange, "")
				if !res.Submitted || res.After != nil {
					t.Errorf("want submitted, not verified: %s", describeResult(res))
				}
			}},
		{name: "the edit tool refuses the named tests; bash edits them and the change is refused", turns: []wireTurn{
			callTool("edit", map[string]string{"command": "str_replace", "path": "test_calc.py", "old_str": "== 2", "new_str": "== 8"}),
			seeing(callTool("bash", map[string]string{"command": "sed -i 's/== 2/== 8/' test_calc.py"}), "edits to it are refused"),
			callTool("submit", nil),
		}, check: func(t *testing.T, res *Result, m *wireModel) {
			wantStatus(t, res, StatusTestsEdited, "")
			if res.After != nil || len(res.TestEdits) == 0 {
				t.Errorf("want the edit reported, nothing verified: %s", describeResult(res))
			}
		}},
		{name: "a wrong fix is unresolved whatever the model says", turns: []wireTurn{
			callTool("edit", map[string]string{"command": "str_replace", "path": "calc.py", "old_str": "    return a + b\n\n", "new_str": "    return a * b\n\n"}),
			say(wireReply{Text: "All tests pass now, the bug is fixed!", Calls: []wireCall{toCall("submit", map[string]any{})}}),
		}, check: func(t *testing.T, res *Result, m *wireModel) {
			wantStatus(t, res, StatusUnresolved, "")
			if res.After == nil || res.After.ExitCode == 0 {
				t.Errorf("want the verification's failure: %s", describeResult(res))
			}
		}},
	})
}

func countSteps(res *Result, kind StepKind) int {
	n := 0
	for _, s := range res.Trace.Steps {
		if s.Kind == kind {
			n++
		}
	}
	return n
}

// Redaction applies to everything the model is shown and the trace
// keeps; events carry the command's output as it comes.
func TestRedactionAndEvents(t *testing.T) {
	task := calcTask(t)
	task.Repo = Repo{Archive: tarGz(t, map[string]string{"calc.py": calcBuggy, "test_calc.py": calcTests, "config.py": "TOKEN = 'sk-SECRET-123'\n"})}
	task.Prompt += " The token is sk-SECRET-123."
	var mu sync.Mutex
	var chunks strings.Builder
	var kinds []StepKind
	cfg := Config{
		Redact: func(s string) string { return strings.ReplaceAll(s, "sk-SECRET-123", "[REDACTED]") },
		OnEvent: func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			kinds = append(kinds, e.Kind)
			if e.Output != nil && e.Stream == sandbox.StreamStdout {
				chunks.Write(e.Output)
			}
		},
	}
	m := newWireModel(t, wireAnthropic,
		func(t testing.TB, req *wireRequest) wireReply {
			if strings.Contains(req.last().Text, "SECRET") {
				t.Errorf("the task reached the model unredacted: %q", req.last().Text)
			}
			return wireReply{Calls: []wireCall{toCall("view", map[string]string{"path": "config.py"}), toCall("bash", map[string]string{"command": "cat config.py; echo streamed-line"})}}
		},
		seeing(callTool("submit", nil), "TOKEN = '[REDACTED]'", "streamed-line"),
	)
	res := runWith(t, m, cfg, task)
	for _, req := range m.received() {
		for _, msg := range req.Messages {
			if strings.Contains(msg.Text, "SECRET") {
				t.Errorf("the model was shown the secret: %q", msg.Text)
			}
		}
	}
	for _, s := range res.Trace.Steps {
		if strings.Contains(s.Output+s.Note+s.Args, "SECRET") {
			t.Errorf("the trace keeps the secret: %+v", s)
		}
	}
	if strings.Contains(res.Trace.Task, "SECRET") {
		t.Errorf("the trace's task keeps the secret")
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(chunks.String(), "streamed-line") || strings.Contains(chunks.String(), "SECRET") {
		t.Errorf("output events %q: want the command's output, redacted", chunks.String())
	}
	for _, k := range []StepKind{StepSetup, StepModel, StepTool, StepSubmit} {
		if !containsKind(kinds, k) {
			t.Errorf("no %s event among %v", k, kinds)
		}
	}
}

func containsKind(kinds []StepKind, k StepKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}
