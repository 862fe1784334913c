package agent_test

// End-to-end tests of the agent. In every test the model is SCRIPTED (no
// language model can run here): a local server speaking the provider's
// real wire format answers from a script (see scripted_test.go), the
// real llm clients talk to it, and the real native sandbox runs the code.
// Each test states what it proves.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// outcome is what a run should end with.
type outcome struct {
	status agent.Status
	reason string
	answer string
	failed int // attempts that failed
	execs  int // cells the sandbox was asked to run
	coder  int // coder requests the scripted server received
}

// expect checks trace and the harness against want, exactly.
func expect(t *testing.T, h *harness, trace *agent.Trace, want outcome) {
	t.Helper()
	if trace.Status != want.status || trace.Reason != want.reason || trace.Answer != want.answer || trace.Budget.FailedAttempts != want.failed {
		t.Errorf("got status=%s reason=%q answer=%q failed attempts=%d; want status=%s reason=%q answer=%q failed attempts=%d\n%s",
			trace.Status, trace.Reason, trace.Answer, trace.Budget.FailedAttempts,
			want.status, want.reason, want.answer, want.failed, dump(trace))
	}
	// The attempts made are counted as the progress events number them:
	// the summary must not say "attempts 1" after "attempt 2" was shown.
	if made := min(want.failed+1, trace.Budget.MaxAttempts); trace.Budget.Attempts != made {
		t.Errorf("budget says %d attempts made, want %d (%d failed of %d)", trace.Budget.Attempts, made, want.failed, trace.Budget.MaxAttempts)
	}
	if h.lastEventAttempt != trace.Budget.Attempts {
		t.Errorf("the last progress event was of attempt %d, the budget counts %d attempts", h.lastEventAttempt, trace.Budget.Attempts)
	}
	if n := h.sandbox.execCount(); n != want.execs {
		t.Errorf("the sandbox ran %d cells, want %d: %q", n, want.execs, h.sandbox.execs)
	}
	if n := len(stepsOf(trace, agent.StepExecute)); n != want.execs {
		t.Errorf("%d execute steps, want %d", n, want.execs)
	}
	if n := len(h.model.of(roleCoder)); n != want.coder {
		t.Errorf("the model received %d coder requests, want %d", n, want.coder)
	}
}

// lastIs asserts that the last message the model received has role and
// contains every one of parts.
func lastIs(role string, parts ...string) func(t *testing.T, req *request) {
	return func(t *testing.T, req *request) {
		t.Helper()
		last := req.last()
		if last.Role != role {
			t.Errorf("last message role = %q, want %q (text %q)", last.Role, role, last.Text)
		}
		for _, p := range parts {
			if !strings.Contains(last.Text, p) {
				t.Errorf("last message lacks %q:\n%s", p, last.Text)
			}
		}
	}
}

// The scripted model (OpenAI tools) runs print(6*7) and answers "42" at
// once; the verifier approves. Proves the happy path end to end: the
// answer, its evidence (code and the sandbox's real output), no failed
// attempt, the steps in order and every model call's tokens counted.
func TestFirstTrySuccess(t *testing.T) {
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		checked(func(t *testing.T, req *request) {
			want := []string{"execute_code", "read_file", "write_file", "list_files", "final_answer"}
			if !slices.Equal(req.Tools, want) {
				t.Errorf("tools offered = %v, want %v", req.Tools, want)
			}
			if len(req.Messages) != 1 || req.Messages[0].Role != "user" || req.Messages[0].Text != "What is 6 times 7?" {
				t.Errorf("first coder request messages = %+v", req.Messages)
			}
		}, execute("print(6*7)")),
		checked(lastIs("tool", "status: ok", "stdout:\n42"), final("42")),
	}})
	trace := h.run(t, agent.Config{}, agent.Task{Prompt: "What is 6 times 7?"})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "42", execs: 1, coder: 2})
	if trace.Code != "print(6*7)" || trace.Output != "42\n" {
		t.Errorf("evidence: code=%q output=%q", trace.Code, trace.Output)
	}
	if got := kinds(trace); got != "plan model execute model verify" {
		t.Errorf("steps = %s, want plan model execute model verify", got)
	}
	if trace.Model != "openai:scripted-model" {
		t.Errorf("model = %q", trace.Model)
	}
	for _, s := range trace.Steps {
		if s.Kind == agent.StepPlan || s.Kind == agent.StepModel || s.Kind == agent.StepVerify {
			if s.Reply == nil || s.Reply.Usage != (llm.Usage{InputTokens: defaultIn, OutputTokens: defaultOut}) {
				t.Errorf("%s step: reply %+v, want usage %d+%d", s.Kind, s.Reply, defaultIn, defaultOut)
			}
		}
	}
	if want := 4 * (defaultIn + defaultOut); trace.Budget.Tokens != want {
		t.Errorf("tokens = %d, want %d (4 model calls)", trace.Budget.Tokens, want)
	}
	if v := stepsOf(trace, agent.StepVerify); len(v) != 1 || v[0].Note != "verdict: ok=true the output answers the task" {
		t.Errorf("verify steps = %+v", v)
	}
	if n := len(h.model.all()); n != 4 {
		t.Errorf("%d requests in all, want 4 (plan, 2 coder, verify)", n)
	}
}

// The scripted coder's first program raises a real NameError in the
// sandbox. Proves the model is shown the failure in the tool result (the
// error type, the traceback, the failing code and the fix advice), fixes
// it, and the run is answered after one failed attempt.
func TestNameErrorFixedOnSecondAttempt(t *testing.T) {
	const bad = "total = 6 * 7\nprint(totl)"
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		execute(bad),
		checked(func(t *testing.T, req *request) {
			lastIs("tool", "NameError", "name 'totl' is not defined", "traceback", "```python\n"+bad+"\n```", "Fix the minimal lines")(t, req)
			if id := req.last().ToolCallID; id != "call_1" {
				t.Errorf("tool result answers %q, want call_1", id)
			}
			if strings.Contains(req.last().Text, "Step back") {
				t.Error("step-back advice after a single error")
			}
		}, execute("total = 6 * 7\nprint(total)")),
		final("42"),
	}})
	trace := h.run(t, agent.Config{}, agent.Task{Prompt: "Compute 6*7."})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "42", failed: 1, execs: 2, coder: 3})
	if got := kinds(trace); got != "plan model execute feedback model execute model verify" {
		t.Errorf("steps = %s", got)
	}
	if ex := stepsOf(trace, agent.StepExecute); len(ex) == 2 && (ex[0].Result.Status != sandbox.StatusError || ex[0].Result.Error == nil || ex[0].Result.Error.Type != "NameError") {
		t.Errorf("first execution: %+v", ex[0].Result)
	}
	if trace.Code != "total = 6 * 7\nprint(total)" || trace.Output != "42\n" {
		t.Errorf("evidence: code=%q output=%q", trace.Code, trace.Output)
	}
}

// Two different programs fail with the same error (type and message).
// Proves the step-back advice is sent after the second identical failure
// and not after the first.
func TestStepBackAfterRepeatedError(t *testing.T) {
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		execute("print(undefined_value)"),
		checked(func(t *testing.T, req *request) {
			lastIs("tool", "NameError", "Fix the minimal lines")(t, req)
			if strings.Contains(req.last().Text, "Step back") {
				t.Errorf("step-back advice after the first error:\n%s", req.last().Text)
			}
		}, execute("x = undefined_value * 2")),
		checked(lastIs("tool", "NameError", "name 'undefined_value' is not defined", "Step back"), execute("print(6*7)")),
		final("42"),
	}})
	trace := h.run(t, agent.Config{}, agent.Task{Prompt: "Compute 6*7."})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "42", failed: 2, execs: 3, coder: 4})
}

// The scripted coder sends the very program it already ran. Proves the
// loop check: it is not executed again, the model is told it already ran
// it, and the repeat counts as a failed attempt.
func TestRepeatedCodeNotRerun(t *testing.T) {
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		execute("print(6*7)"),
		execute("print(6*7)"),
		checked(lastIs("tool", "You already ran exactly this code (attempt 1)", "change the code"), final("42")),
	}})
	trace := h.run(t, agent.Config{}, agent.Task{Prompt: "Compute 6*7."})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "42", failed: 1, execs: 1, coder: 3})
	if got := kinds(trace); got != "plan model execute model feedback model verify" {
		t.Errorf("steps = %s", got)
	}
}

// Each budget stops the loop exactly when it is used up. Proves, for
// attempts, tokens, execution time and artifact bytes, the status, the
// reason, how many cells ran and how many model calls were made.
func TestBudgetsStopTheLoop(t *testing.T) {
	const sleep1 = "import time\ntime.sleep(1)\nprint('slept %d')"
	for _, tc := range []struct {
		name  string
		cfg   agent.Config
		coder []turn
		want  outcome
		check func(t *testing.T, h *harness, trace *agent.Trace)
	}{{
		// MaxRetries 1 allows 2 attempts: both fail, the loop stops
		// after the second without asking the model again.
		name:  "attempts",
		cfg:   agent.Config{MaxRetries: 1},
		coder: []turn{execute("print(missing_a)"), execute("print(missing_b)"), final("never asked")},
		want:  outcome{status: agent.StatusBudget, reason: "attempts budget exhausted", failed: 2, execs: 2, coder: 2},
		check: func(t *testing.T, h *harness, trace *agent.Trace) {
			if trace.Budget.MaxAttempts != 2 {
				t.Errorf("MaxAttempts = %d, want 2", trace.Budget.MaxAttempts)
			}
		},
	}, {
		// NoRetries allows the first attempt only (a zero MaxRetries
		// means the default).
		name:  "no retries",
		cfg:   agent.Config{MaxRetries: agent.NoRetries},
		coder: []turn{execute("print(missing_a)"), final("never asked")},
		want:  outcome{status: agent.StatusBudget, reason: "attempts budget exhausted", failed: 1, execs: 1, coder: 1},
		check: func(t *testing.T, h *harness, trace *agent.Trace) {
			if trace.Budget.MaxAttempts != 1 {
				t.Errorf("MaxAttempts = %d, want 1", trace.Budget.MaxAttempts)
			}
		},
	}, {
		// Every reply reports 10+5 tokens: plan (15), coder (30), coder
		// (45 ≥ 40). No model call is made once the budget is reached;
		// the last successful execution is kept as evidence.
		name:  "tokens",
		cfg:   agent.Config{MaxTokens: 40},
		coder: []turn{execute("print(1)"), execute("print(2)"), final("never asked")},
		want:  outcome{status: agent.StatusBudget, reason: "token budget exhausted", execs: 2, coder: 2},
		check: func(t *testing.T, h *harness, trace *agent.Trace) {
			if trace.Budget.Tokens != 45 {
				t.Errorf("tokens = %d, want 45", trace.Budget.Tokens)
			}
			if n := len(h.model.all()); n != 3 {
				t.Errorf("%d model requests in all, want 3 (none after the budget was reached)", n)
			}
			if n := len(stepsOf(trace, agent.StepModel)) + len(stepsOf(trace, agent.StepPlan)); n != 3 {
				t.Errorf("%d model steps, want 3", n)
			}
			if trace.Code != "print(2)" || trace.Output != "2\n" {
				t.Errorf("evidence: code=%q output=%q", trace.Code, trace.Output)
			}
		},
	}, {
		// 1.5 s of execution: the first cell sleeps 1 s, the second gets
		// only what is left (under 0.5 s) as its timeout and times out,
		// and the third program is refused without running.
		name:  "execution time",
		cfg:   agent.Config{MaxExecTime: 1500 * time.Millisecond},
		coder: []turn{execute(strings.Replace(sleep1, "%d", "1", 1)), execute(strings.Replace(sleep1, "%d", "2", 1)), execute("print('three')"), final("never asked")},
		want:  outcome{status: agent.StatusBudget, reason: "execution time budget exhausted", failed: 1, execs: 2, coder: 3},
		check: func(t *testing.T, h *harness, trace *agent.Trace) {
			ex := stepsOf(trace, agent.StepExecute)
			if len(ex) != 2 {
				return
			}
			if ex[0].Result.Status != sandbox.StatusOK {
				t.Errorf("first cell: %s %q", ex[0].Result.Status, ex[0].Result.Reason)
			}
			if ex[1].Result.Status != sandbox.StatusTimeout {
				t.Errorf("second cell: %s %q, want timeout", ex[1].Result.Status, ex[1].Result.Reason)
			}
			if ex[1].DurationMS >= 900 {
				t.Errorf("second cell took %.0f ms: its timeout was not cut to the remaining budget", ex[1].DurationMS)
			}
			if trace.Budget.ExecMS < 1500 {
				t.Errorf("exec ms = %.0f, want ≥ 1500", trace.Budget.ExecMS)
			}
			if last := h.model.of(roleCoder)[2].last(); !strings.Contains(last.Text, "status: timeout") || !strings.Contains(last.Text, "ran out of time") {
				t.Errorf("timeout feedback = %q", last.Text)
			}
		},
	}, {
		// A 5000-byte file against a 1000-byte artifact budget.
		name:  "artifact bytes",
		cfg:   agent.Config{MaxArtifactBytes: 1000},
		coder: []turn{execute("open('big.bin', 'wb').write(b'x' * 5000)"), final("never asked")},
		want:  outcome{status: agent.StatusBudget, reason: "artifact bytes budget exhausted", execs: 1, coder: 1},
		check: func(t *testing.T, h *harness, trace *agent.Trace) {
			if trace.Budget.ArtifactBytes != 5000 {
				t.Errorf("artifact bytes = %d, want 5000", trace.Budget.ArtifactBytes)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, wireOpenAI, script{Coder: tc.coder})
			trace := h.run(t, tc.cfg, agent.Task{Prompt: "Do the task."})
			expect(t, h, trace, tc.want)
			if n := len(h.model.of(roleVerify)); n != 0 {
				t.Errorf("%d verifier calls, want 0", n)
			}
			tc.check(t, h, trace)
		})
	}
}

// Malformed and unusable replies. Proves that a reply the agent can act
// on but not accept (bad arguments, an unknown tool, no tool call, a
// missing argument, an answer without evidence) is fed back to the model
// and counts as one failed attempt, while a reply the client cannot
// decode, or an HTTP error that is not transient, ends the run as failed
// naming the model error, without retries and without running anything.
func TestBadReplies(t *testing.T) {
	recover42 := []turn{execute("print(42)"), final("42")}
	for _, tc := range []struct {
		name  string
		first turn
		// feedback, if set, is the role and text the model must be shown
		// after first; the scripted model then recovers.
		feedbackRole, feedback string
		want                   outcome
		// reasonHas replaces want.reason for errors whose text is partly
		// the SDK's own: the reason must start with "openai: " (the
		// provider's error, unchanged) and contain each part.
		reasonHas []string
	}{{
		name:         "invalid JSON arguments",
		first:        toolCall("execute_code", `{"code": "print(42)"`),
		feedbackRole: "tool", feedback: "The arguments of execute_code are not valid JSON",
		want: outcome{status: agent.StatusAnswered, answer: "42", failed: 1, execs: 1, coder: 3},
	}, {
		name:         "unknown tool",
		first:        toolCall("run_shell", `{"cmd": "ls"}`),
		feedbackRole: "tool", feedback: `There is no tool "run_shell"; the tools are execute_code, read_file, write_file, list_files and final_answer.`,
		want: outcome{status: agent.StatusAnswered, answer: "42", failed: 1, execs: 1, coder: 3},
	}, {
		name:         "no tool call",
		first:        text("I believe the answer is 42."),
		feedbackRole: "user", feedback: "Reply with a tool call: execute_code to run code, or final_answer when the output answers the task.",
		want: outcome{status: agent.StatusAnswered, answer: "42", failed: 1, execs: 1, coder: 3},
	}, {
		name:         "missing argument",
		first:        toolCall("execute_code", `{"source": "print(42)"}`),
		feedbackRole: "tool", feedback: `execute_code needs the argument "code".`,
		want: outcome{status: agent.StatusAnswered, answer: "42", failed: 1, execs: 1, coder: 3},
	}, {
		name:         "answer before any code",
		first:        final("42"),
		feedbackRole: "tool", feedback: "You answered without running code that supports the answer.",
		want: outcome{status: agent.StatusAnswered, answer: "42", failed: 1, execs: 1, coder: 3},
	}, {
		name:      "HTTP 200 garbage body",
		first:     reply(answer{Raw: "<html>this is not json{"}),
		want:      outcome{status: agent.StatusFailed, coder: 1},
		reasonHas: []string{"error parsing response json", "invalid character '<'"},
	}, {
		name:  "HTTP 200 without choices",
		first: reply(answer{Raw: `{"id":"x","object":"chat.completion","created":1,"model":"scripted-model","choices":[]}`}),
		want:  outcome{status: agent.StatusFailed, reason: "openai: response has no choices", coder: 1},
	}, {
		name:      "HTTP 400",
		first:     httpError(400, ""),
		want:      outcome{status: agent.StatusFailed, coder: 1},
		reasonHas: []string{"400", "scripted HTTP 400"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			coder := []turn{tc.first}
			if tc.feedback != "" {
				coder = append(coder, checked(lastIs(tc.feedbackRole, tc.feedback), recover42[0]), recover42[1])
			}
			h := newHarness(t, wireOpenAI, script{Coder: coder})
			trace := h.run(t, agent.Config{}, agent.Task{Prompt: "Print 42 and answer it."})
			want := tc.want
			if tc.reasonHas != nil {
				if !strings.HasPrefix(trace.Reason, "openai: ") {
					t.Errorf("reason %q does not start with %q", trace.Reason, "openai: ")
				}
				for _, part := range tc.reasonHas {
					if !strings.Contains(trace.Reason, part) {
						t.Errorf("reason %q lacks %q", trace.Reason, part)
					}
				}
				want.reason = trace.Reason
			}
			expect(t, h, trace, want)
			if tc.feedback != "" {
				if n := len(stepsOf(trace, agent.StepFeedback)); n != 1 {
					t.Errorf("%d feedback steps, want 1", n)
				}
				return
			}
			// The failed model call is in the trace with its error.
			models := stepsOf(trace, agent.StepModel)
			if len(models) != 1 || models[0].Reply != nil || models[0].Note != "model error: "+trace.Reason {
				t.Errorf("model steps = %+v", models)
			}
		})
	}
}

// The scripted server answers the first coder request with a transient
// error (429 or 503, Retry-After: 0), then normally. Proves the client's
// retry is invisible to the agent: the run is answered, the server saw
// two requests for that turn, the trace has one model step for it.
func TestTransientErrorRetried(t *testing.T) {
	for _, tc := range []struct {
		name, wire string
		status     int
	}{
		{"openai 429", wireOpenAI, 429},
		{"openai 503", wireOpenAI, 503},
		{"anthropic 429", wireAnthropic, 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.wire, script{Coder: []turn{httpError(tc.status, "0"), execute("print(6*7)"), final("42")}})
			trace := h.run(t, agent.Config{}, agent.Task{Prompt: "Compute 6*7."})
			expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "42", execs: 1, coder: 3})
			var statuses []int
			for _, r := range h.model.of(roleCoder) {
				statuses = append(statuses, r.Status)
			}
			if want := []int{tc.status, 200, 200}; !slices.Equal(statuses, want) {
				t.Errorf("coder statuses = %v, want %v", statuses, want)
			}
			if reqs := h.model.of(roleCoder); len(reqs) == 3 && string(reqs[0].Body) != string(reqs[1].Body) {
				t.Error("the retry's body differs from the first attempt's")
			}
			if n := len(stepsOf(trace, agent.StepModel)); n != 2 {
				t.Errorf("%d coder model steps, want 2", n)
			}
		})
	}
}

// Config.Approve is asked before the code runs. Proves a refusal ends the
// run as denied with nothing executed (the session never got a cell and
// the file the code would have made does not exist), and that approval
// lets the same code run.
func TestApproval(t *testing.T) {
	const code = "open('made.txt', 'w').write('x')\nprint('made')"
	for _, approve := range []bool{false, true} {
		name := "denied"
		if approve {
			name = "approved"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, wireOpenAI, script{Coder: []turn{execute(code), final("made")}})
			var asked []string
			cfg := agent.Config{Approve: func(_ context.Context, c string) (bool, error) {
				asked = append(asked, c)
				return approve, nil
			}}
			trace := h.run(t, cfg, agent.Task{Prompt: "Create made.txt."})
			if !slices.Equal(asked, []string{code}) {
				t.Errorf("approver asked about %q, want exactly the code once", asked)
			}
			files := h.sandbox.closedFiles()
			if !approve {
				expect(t, h, trace, outcome{status: agent.StatusDenied, reason: "execution not approved", coder: 1})
				if slices.Contains(files, "made.txt") {
					t.Errorf("made.txt exists after a denied run: %v", files)
				}
				return
			}
			expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "made", execs: 1, coder: 2})
			if !slices.Contains(files, "made.txt") {
				t.Errorf("made.txt missing after an approved run: %v", files)
			}
		})
	}
}

// The verifier (scripted) rejects an output that answers another
// question. Proves its reason reaches the coder, the fix is verified
// again and the run is answered after one failed attempt.
func TestVerifierRejects(t *testing.T) {
	const reason = "the output is the mean, the task asked for the median"
	h := newHarness(t, wireOpenAI, script{
		Verdicts: []string{`{"ok": false, "reason": "` + reason + `"}`, "Looks right: " + okVerdict},
		Coder: []turn{
			execute("xs = [1, 2, 3, 10]\nprint(sum(xs) / len(xs))"),
			final("4.0"),
			checked(lastIs("tool", "A reviewer rejected the answer: "+reason, "Fix the code or the answer."),
				execute("import statistics\nprint(statistics.median(xs))")),
			final("2.5"),
		},
	})
	trace := h.run(t, agent.Config{}, agent.Task{Prompt: "What is the median of 1, 2, 3 and 10?"})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "2.5", failed: 1, execs: 2, coder: 4})
	verifies := h.model.of(roleVerify)
	if len(verifies) != 2 {
		t.Fatalf("%d verifier calls, want 2", len(verifies))
	}
	if got := verifies[0].last().Text; !strings.Contains(got, "stdout:\n4.0") || !strings.Contains(got, "Proposed answer:\n4.0") {
		t.Errorf("first verifier request = %q", got)
	}
	if got := verifies[1].last().Text; !strings.Contains(got, "statistics.median(xs)") || !strings.Contains(got, "Proposed answer:\n2.5") {
		t.Errorf("second verifier request = %q", got)
	}
	if trace.Output != "2.5\n" {
		t.Errorf("output = %q", trace.Output)
	}
}

// The planner (scripted) answers DIRECT. Proves a task without files is
// answered with no sandbox session at all, while for a task with a file
// the DIRECT reply is ignored and code runs on the file.
func TestPlannerDirect(t *testing.T) {
	t.Run("no file", func(t *testing.T) {
		h := newHarness(t, wireOpenAI, script{Plan: "DIRECT: 4"})
		trace := h.run(t, agent.Config{}, agent.Task{Prompt: "What is 2+2?"})
		expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "4"})
		if h.sandbox.sessions != 0 || kinds(trace) != "plan" || len(h.model.all()) != 1 {
			t.Errorf("sessions=%d steps=%q requests=%d, want 0, plan, 1", h.sandbox.sessions, kinds(trace), len(h.model.all()))
		}
	})
	t.Run("with file", func(t *testing.T) {
		h := newHarness(t, wireOpenAI, script{Plan: "DIRECT: 3", Coder: []turn{
			checked(lastIs("user", "Files in the working directory: data.csv (8 bytes)."),
				execute("print(sum(1 for _ in open('data.csv')) - 1)")),
			checked(lastIs("tool", "stdout:\n3"), final("3")),
		}})
		trace := h.run(t, agent.Config{}, agent.Task{Prompt: "How many data rows are in data.csv?",
			Files: []sandbox.File{{Name: "data.csv", Content: sandbox.Data("a\n1\n2\n3\n")}}})
		expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "3", execs: 1, coder: 2})
		if h.sandbox.sessions != 1 {
			t.Errorf("%d sessions, want 1", h.sandbox.sessions)
		}
		if plans := h.model.of(rolePlan); len(plans) != 1 || !strings.Contains(plans[0].last().Text, "(The task comes with files: data.csv (8 bytes).)") {
			t.Errorf("planner request: %+v", plans)
		}
	})
}

// The Anthropic messages wire format end to end: tool_use blocks in the
// scripted replies, the system prompt top level, and the tool_result the
// client sends back. Proves the second coder request carries a user turn
// whose tool_result answers the tool_use by its ID with the sandbox's
// output.
func TestAnthropicEndToEnd(t *testing.T) {
	h := newHarness(t, wireAnthropic, script{Coder: []turn{
		execute("print(6*7)"),
		checked(func(t *testing.T, req *request) {
			var body struct {
				System   []struct{ Type, Text string }
				Messages []struct {
					Role    string
					Content []struct {
						Type, Text, ID, Name string
						Input                json.RawMessage
						ToolUseID            string `json:"tool_use_id"`
						Content              []struct{ Type, Text string }
					}
				}
			}
			if err := json.Unmarshal(req.Body, &body); err != nil {
				t.Errorf("body: %v", err)
				return
			}
			if len(body.System) != 1 || !strings.HasPrefix(body.System[0].Text, "You solve the user's task") {
				t.Errorf("system = %+v", body.System)
			}
			m := body.Messages
			if len(m) != 3 || m[0].Role != "user" || m[1].Role != "assistant" || m[2].Role != "user" {
				t.Errorf("messages = %s", req.Body)
				return
			}
			if len(m[1].Content) != 1 || m[1].Content[0].Type != "tool_use" || m[1].Content[0].ID != "toolu_1" ||
				m[1].Content[0].Name != "execute_code" || string(m[1].Content[0].Input) != `{"code":"print(6*7)"}` {
				t.Errorf("assistant turn = %+v", m[1].Content)
			}
			if len(m[2].Content) != 1 || m[2].Content[0].Type != "tool_result" || m[2].Content[0].ToolUseID != "toolu_1" ||
				len(m[2].Content[0].Content) != 1 || !strings.Contains(m[2].Content[0].Content[0].Text, "status: ok\nstdout:\n42") {
				t.Errorf("tool_result turn = %+v", m[2].Content)
			}
		}, final("42")),
	}})
	trace := h.run(t, agent.Config{}, agent.Task{Prompt: "What is 6 times 7?"})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "42", execs: 1, coder: 2})
	if trace.Model != "anthropic:scripted-model" || trace.Output != "42\n" || trace.Budget.Tokens != 4*(defaultIn+defaultOut) {
		t.Errorf("model=%q output=%q tokens=%d", trace.Model, trace.Output, trace.Budget.Tokens)
	}
	if got := kinds(trace); got != "plan model execute model verify" {
		t.Errorf("steps = %s", got)
	}
}

// Text mode (for models without tool calling), OpenAI wire, no tools
// offered. Proves a reply with neither code nor an answer is a failed
// attempt with instructions, a prose reply with a ```python block is
// executed, and "FINAL ANSWER: 42" ends the run answered.
func TestTextMode(t *testing.T) {
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		checked(func(t *testing.T, req *request) {
			if len(req.Tools) != 0 {
				t.Errorf("tools offered in text mode: %v", req.Tools)
			}
			if !strings.HasPrefix(req.System, "You solve the user's task by writing Python that the user runs") {
				t.Errorf("system = %q", req.System)
			}
		}, text("I need to think about this first.")),
		checked(lastIs("user", "Reply with exactly one ```python fenced block to run, or a line starting FINAL ANSWER:"),
			text("Let me compute it.\n\n```python\nprint(6*7)\n```\n")),
		checked(lastIs("user", "The code ran:\nstatus: ok\nstdout:\n42", "reply with FINAL ANSWER:"),
			text("The product is 42.\nFINAL ANSWER: 42")),
	}})
	trace := h.run(t, agent.Config{TextMode: true}, agent.Task{Prompt: "What is 6 times 7?"})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "42", failed: 1, execs: 1, coder: 3})
	if trace.Code != "print(6*7)" || trace.Output != "42\n" {
		t.Errorf("evidence: code=%q output=%q", trace.Code, trace.Output)
	}
	if got := kinds(trace); got != "plan model feedback model execute model verify" {
		t.Errorf("steps = %s", got)
	}
}

// The file tools through tool calls, on a task with an input file. Proves
// list_files and read_file (two calls in one reply, each answered by its
// ID) see the input file, read_file outside the working directory gives
// the model an error text (and no host file) instead of ending the run,
// and a file written with write_file is visible to executed code.
func TestFileTools(t *testing.T) {
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		reply(answer{Calls: []call{{Name: "list_files", Args: `{}`}, {Name: "read_file", Args: `{"path": "data.csv"}`}}}),
		checked(func(t *testing.T, req *request) {
			n := len(req.Messages)
			if n < 3 {
				t.Errorf("messages = %+v", req.Messages)
				return
			}
			list, read := req.Messages[n-2], req.Messages[n-1]
			if list.Role != "tool" || list.ToolCallID != "call_1" || list.Text != "data.csv\t8\n" {
				t.Errorf("list_files result = %+v", list)
			}
			if read.Role != "tool" || read.ToolCallID != "call_2" || read.Text != "x\n1\n2\n3" {
				t.Errorf("read_file result = %+v", read)
			}
		}, reply(answer{Calls: []call{{Name: "read_file", Args: `{"path": "../etc/passwd"}`}, {Name: "read_file", Args: `{"path": "/etc/passwd"}`}}})),
		checked(func(t *testing.T, req *request) {
			for _, m := range req.Messages[len(req.Messages)-2:] {
				if m.Role != "tool" || !strings.HasPrefix(m.Text, "error: ") || strings.Contains(m.Text, "root:") {
					t.Errorf("read outside the working directory gave %+v", m)
				}
			}
		}, toolCall("write_file", `{"path": "notes.txt", "content": "total:"}`)),
		checked(lastIs("tool", "written"),
			execute("print(open('notes.txt').read(), sum(int(v) for v in open('data.csv').read().split()[1:]))")),
		checked(lastIs("tool", "stdout:\ntotal: 6"), final("6")),
	}})
	trace := h.run(t, agent.Config{}, agent.Task{Prompt: "Sum the column of data.csv.",
		Files: []sandbox.File{{Name: "data.csv", Content: sandbox.Data("x\n1\n2\n3\n")}}})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "6", execs: 1, coder: 5})
	var notes []string
	for _, s := range stepsOf(trace, agent.StepTool) {
		notes = append(notes, s.Note)
	}
	if want := []string{"list_files", "read_file data.csv", "read_file ../etc/passwd", "read_file /etc/passwd", "write_file notes.txt"}; !slices.Equal(notes, want) {
		t.Errorf("tool steps = %q, want %q", notes, want)
	}
	if files := h.sandbox.closedFiles(); !slices.Contains(files, "data.csv") || !slices.Contains(files, "notes.txt") {
		t.Errorf("session files = %v", files)
	}
}

// Text mode: the model's code block prints its result after a
// "FINAL ANSWER:" label, as models often do. The prompt defines the
// answer as a line starting "FINAL ANSWER:", and this one is code inside a
// fenced block, so the code must run and the model then answers. This
// test FAILS against the current agent (reported as a bug): textTurn
// looks for the marker anywhere in the reply (strings.Index), so the
// block is taken as an answer (without evidence: a failed attempt) and
// never runs.
func TestTextModeMarkerInsideCodeRuns(t *testing.T) {
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		text("```python\nprint('FINAL ANSWER:', 6*7)\n```"),
		checked(lastIs("user", "The code ran:\nstatus: ok\nstdout:\nFINAL ANSWER: 42"), text("FINAL ANSWER: 42")),
	}})
	trace := h.run(t, agent.Config{TextMode: true}, agent.Task{Prompt: "What is 6 times 7?"})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "42", execs: 1, coder: 2})
}
