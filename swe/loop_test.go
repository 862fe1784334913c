package swe

import (
	"strings"
	"testing"
	"time"
)

// fixTurns are a model that fixes the tiny repository's bug: it views the
// module, runs the tests and searches in one reply, replaces the line,
// runs the tests and submits; each turn checks what the last one showed.
func fixTurns() []wireTurn {
	return []wireTurn{
		callTool("view", map[string]any{"path": "calc.py"}),
		seeing(say(wireReply{Text: "Let me reproduce it and find the callers.", Calls: []wireCall{
			toCall("bash", map[string]string{"command": "python3 -m pytest -q test_calc.py 2>&1 | tail -3"}),
			toCall("search", map[string]any{"pattern": "calc", "glob": "*.py"}),
		}}), "     6\t    return a + b"),
		seeing(callTool("edit", map[string]string{"command": "str_replace", "path": "calc.py",
			"old_str": "def subtract(a, b):\n    return a + b", "new_str": "def subtract(a, b):\n    return a - b"}),
			"1 failed, 1 passed", "exit code: 0", "test_calc.py:1:from calc import add, subtract", "Files whose names hold the pattern:\ncalc.py\ntest_calc.py"),
		seeing(callTool("run_tests", map[string]any{}), "Edited calc.py (str_replace)", "     6\t    return a - b"),
		seeing(callTool("submit", map[string]any{}), "2 passed"),
	}
}

// A scripted model fixes a real bug in a real repository end to end, on
// both wire formats: the tests before fail, the diff is git's, and the
// verdict comes from the fresh sandbox.
func TestFixEndToEnd(t *testing.T) {
	for _, wire := range []string{wireOpenAI, wireAnthropic} {
		t.Run(wire, func(t *testing.T) {
			m := newWireModel(t, wire, fixTurns()...)
			res := runWith(t, m, Config{}, calcTask(t))
			if res.Status != StatusResolved || !res.Submitted {
				t.Fatalf("want resolved and submitted: %s", describeResult(res))
			}
			if !strings.Contains(res.Diff, "-    return a + b\n+    return a - b") || !strings.Contains(res.Diff, "a/calc.py") {
				t.Errorf("diff %q, want calc.py's line fixed", res.Diff)
			}
			if res.Before == nil || res.Before.ExitCode == 0 || res.After == nil || res.After.ExitCode != 0 {
				t.Errorf("before %+v after %+v: want failing before, passing after", res.Before, res.After)
			}
			if b := res.Trace.Budget; b.Steps != 5 || b.Tokens != 5*15 || b.ExecMS <= 0 {
				t.Errorf("budget %+v: want 5 steps, 75 tokens, some exec time", b)
			}
			// The tests before ran while the model was first asked: they
			// were still running when it was (they take a second; the
			// scripted model answers at once).
			var firstModel, before *Step
			for i, s := range res.Trace.Steps {
				switch {
				case s.Kind == StepModel && firstModel == nil:
					firstModel = &res.Trace.Steps[i]
				case s.Kind == StepVerify && before == nil:
					before = &res.Trace.Steps[i]
				}
			}
			if firstModel == nil || before == nil || !before.At.Add(time.Duration(before.DurationMS*float64(time.Millisecond))).After(firstModel.At) {
				t.Errorf("the tests before did not overlap the first model call: %s", describeResult(res))
			}
			// Every call was answered by its ID.
			reqs := m.received()
			results := reqs[2].toolResults()
			if len(results) != 2 || results[0].ToolCallID != reqs[2].Messages[len(reqs[2].Messages)-3].ToolCalls[0].ID || results[1].ToolCallID != reqs[2].Messages[len(reqs[2].Messages)-3].ToolCalls[1].ID {
				t.Errorf("the two calls of one reply: results %+v", results)
			}
			if !strings.Contains(reqs[0].System, "/work/repo") || !strings.Contains(reqs[0].System, "test_calc.py::test_subtract") || !strings.Contains(reqs[0].System, "python3 -m pytest -q") {
				t.Errorf("system prompt %q lacks the root, the named tests or the test command", reqs[0].System)
			}
			if got := strings.Join(reqs[0].Tools, ","); got != "bash,view,edit,search,run_tests,submit" {
				t.Errorf("tools offered: %s", got)
			}
		})
	}
}

// Native tool calling as servers and models really send it: arguments
// encoded twice, and calls written in the text although tools were
// offered (an OpenAI-compatible server without a tool-call parser passes
// Qwen's <tool_call> tags on as content); their results come back as a
// user message, there being no native ID to answer.
func TestNativeModeShapes(t *testing.T) {
	twice := toCall("view", map[string]string{"path": "calc.py"})
	twice.Twice = true
	m := newWireModel(t, wireOpenAI,
		say(wireReply{Calls: []wireCall{twice}}),
		seeing(prose("<tool_call>\n"+mustJSON(map[string]any{"name": "edit", "arguments": map[string]string{"command": "str_replace", "path": "calc.py",
			"old_str": "def subtract(a, b):\n    return a + b", "new_str": "def subtract(a, b):\n    return a - b"}})+"\n</tool_call>"), "     6\t    return a + b"),
		func(t testing.TB, req *wireRequest) wireReply {
			if last := req.last(); last.Role != "user" || !strings.Contains(last.Text, "Result of call 1 (edit)") || !strings.Contains(last.Text, "Edited calc.py") {
				t.Errorf("the text call's result came back as %+v; want a user message", last)
			}
			return wireReply{Calls: []wireCall{toCall("submit", map[string]any{})}}
		},
	)
	res := runWith(t, m, Config{}, calcTask(t))
	if res.Status != StatusResolved || res.Trace.Budget.Steps != 3 {
		t.Fatalf("want resolved in 3 steps: %s", describeResult(res))
	}
}
