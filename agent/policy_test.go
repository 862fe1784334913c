package agent_test

import (
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// No model can run here: the model is the scripted server of
// scripted_test.go, speaking OpenAI's real wire format. Its coder's first
// program imports socket; the sandbox is the service's sessions (as every
// agent of the CLI and the API gets them) on the native runtime, under a
// server policy of block. Proves the program is blocked before it runs,
// the findings reach the model in the next request, with the code and the
// advice to rewrite it, as an error's would, and the rewritten program
// runs and answers.
func TestPolicyBlockedProgramRewritten(t *testing.T) {
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(service.Config{Runtime: nativeRuntime(t), Redactor: red,
		Policy: sandbox.Policy{Mode: sandbox.PolicyBlock}})
	if err != nil {
		t.Fatal(err)
	}
	const blocked = "import socket\nprint(6 * 7)"
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		execute(blocked),
		checked(lastIs("tool", "status: blocked", "nothing ran",
			"code policy (block, strict) findings:",
			"line 1, col 1: blocked-import: module socket is blocked (strict), by import: import socket",
			"```python\n"+blocked+"\n```", "The code policy blocked this program"),
			execute("print(6 * 7)")),
		final("42"),
	}})
	h.sandbox.rt = svc.SessionRuntime("default", "agr_policy")
	trace := h.run(t, agent.Config{}, agent.Task{Prompt: "What is 6 times 7?"})
	expect(t, h, trace, outcome{status: agent.StatusAnswered, answer: "42", failed: 1, execs: 2, coder: 3})
	if ex := stepsOf(trace, agent.StepExecute); len(ex) != 2 || ex[0].Result.Status != sandbox.StatusBlocked || len(ex[0].Result.Findings) != 1 {
		t.Errorf("executions: %s", dump(trace))
	}
}
