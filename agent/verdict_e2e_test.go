package agent_test

import (
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
)

// The verifier (scripted) answers in prose that states no verdict, every
// time. Proves it is asked once more, then the answer is returned marked
// unverified, with its evidence, and no attempt meant for failing code is
// used. Before, each unreadable verdict counted as a rejection: the agent
// spent its whole attempts budget with the correct answer in hand.
func TestUnreadableVerdictIsUnverified(t *testing.T) {
	const prose = "The code multiplies 6 by 7 and prints 42, which is what the task asks for."
	h := newHarness(t, wireOpenAI, script{
		Verdicts: []string{prose, prose, prose, prose, prose},
		Coder:    []turn{execute("print(6*7)"), final("42"), final("42"), final("42"), final("42")},
	})
	trace := h.run(t, agent.Config{}, agent.Task{Prompt: "What is 6 times 7?"})
	expect(t, h, trace, outcome{status: agent.StatusUnverified, reason: "the verifier's reply could not be read, twice", answer: "42", execs: 1, coder: 2})
	if trace.Code != "print(6*7)" || trace.Output != "42\n" {
		t.Errorf("evidence: code=%q output=%q", trace.Code, trace.Output)
	}
	verifies := h.model.of(roleVerify)
	if len(verifies) != 2 {
		t.Fatalf("%d verifier calls, want 2 (one question, asked again once)", len(verifies))
	}
	if again := verifies[1].last(); again.Role != "user" || !strings.Contains(again.Text, "could not be read") {
		t.Errorf("the second verifier request ends with %+v, want the reason it is asked again", again)
	}
}
