package agent_test

// Tests of the hooks a caller running the agent in a session of its own
// (the data analyst) uses: instructions added to the coder's system
// prompt, the conversation so far before the task, and a host-side check
// of the answer's form. The model is SCRIPTED (no language model can run
// here): a local server speaking OpenAI's wire format, see
// scripted_test.go; the code runs in the real native sandbox.

import (
	"errors"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/llm"
)

// Proves Instructions end the coder's system prompt and History comes
// between it and the task, in order and unchanged.
func TestInstructionsAndHistory(t *testing.T) {
	history := []llm.Message{
		{Role: llm.User, Content: "What is 6 times 7?"},
		{Role: llm.Assistant, Content: "42 (code: x = 6*7)"},
	}
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		checked(func(t *testing.T, req *request) {
			if !strings.HasSuffix(req.System, "\n\nThe variable x holds 42.") {
				t.Errorf("system prompt does not end with the instructions:\n%s", req.System)
			}
			want := []message{{Role: "user", Text: "What is 6 times 7?"}, {Role: "assistant", Text: "42 (code: x = 6*7)"}, {Role: "user", Text: "And x plus 1?"}}
			if len(req.Messages) != len(want) {
				t.Fatalf("messages = %+v, want %+v", req.Messages, want)
			}
			for i, m := range want {
				if req.Messages[i].Role != m.Role || req.Messages[i].Text != m.Text {
					t.Errorf("message %d = %s %q, want %s %q", i, req.Messages[i].Role, req.Messages[i].Text, m.Role, m.Text)
				}
			}
		}, execute("print(42+1)")),
		final("43"),
	}})
	trace := h.run(t, agent.Config{SkipPlan: true, Instructions: "The variable x holds 42."}, agent.Task{Prompt: "And x plus 1?", History: history})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "43", execs: 1, coder: 2})
}

// errNoToken is the check's verdict on an answer without the token.
var errNoToken = errors.New("it must contain @answer[value]")

// needsToken is a CheckAnswer accepting answers holding "@answer[".
func needsToken(answer string) error {
	if !strings.Contains(answer, "@answer[") {
		return errNoToken
	}
	return nil
}

// Proves CheckAnswer: an answer it refuses goes back to the model with
// the check's words and is not verified; the first refusal costs no
// attempt, the second one does, and a restated answer that passes is
// verified and returned, the code not run again.
func TestCheckAnswerRestates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []string
		want    outcome
	}{
		{"restated once", []string{"43", "@answer[43]"},
			outcome{status: agent.StatusAnswered, answer: "@answer[43]", failed: 0, execs: 1, coder: 3}},
		{"restated twice", []string{"43", "it is 43", "@answer[43]"},
			outcome{status: agent.StatusAnswered, answer: "@answer[43]", failed: 1, execs: 1, coder: 4}},
		{"never restated", []string{"43", "43!", "43.", "43?", "forty-three"},
			outcome{status: agent.StatusBudget, reason: "attempts budget exhausted", failed: 4, execs: 1, coder: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			turns := []turn{execute("print(42+1)")}
			for i, a := range tc.answers {
				next := final(a)
				if i > 0 {
					next = checked(lastIs("tool", "The answer's form is wrong: it must contain @answer[value]", "no need to run the code again"), next)
				}
				turns = append(turns, next)
			}
			h := newHarness(t, wireOpenAI, script{Coder: turns})
			trace := h.run(t, agent.Config{SkipPlan: true, CheckAnswer: needsToken}, agent.Task{Prompt: "What is 42 plus 1? Answer as @answer[value]."})
			expect(t, h, trace, tc.want)
			verified := len(h.model.of(roleVerify))
			if want := map[bool]int{true: 1, false: 0}[tc.want.status == agent.StatusAnswered]; verified != want {
				t.Errorf("the verifier was asked %d times, want %d", verified, want)
			}
		})
	}
}
