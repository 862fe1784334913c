package agent_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// TestSecretsNeverReachTheModel drives the agent through the service, as
// every transport does, against the scripted model server (no model runs
// here: a local server speaks the OpenAI wire format from a script). The
// program prints a configured secret and an AWS key, writes them to a file
// whose name holds the secret, and the model then lists and reads that
// file: no request the model provider receives may hold either, and every
// execution must be a run record linked to the agent run.
func TestSecretsNeverReachTheModel(t *testing.T) {
	const secret = "hunter2-correct-horse-battery"
	const awsKey = "AKIAIOSFODNN7EXAMPLE"
	// The model's code builds the values, so that the code itself (which
	// is the model's own text) holds neither.
	program := strings.Join([]string{
		"s = 'hunter2-' + 'correct-horse-battery'",
		"k = 'AKIA' + 'IOSFODNN7EXAMPLE'",
		"print('secret:', s)",
		"print('key:', k)",
		"import sys; print('stderr too:', s, k, file=sys.stderr)",
		"open('creds-' + s + '.txt', 'w').write(s + ' ' + k + '\\n')",
		"open('creds.txt', 'w').write('aws_access_key_id = ' + k + '\\n' + s + '\\n')",
		"raise ValueError('failing with ' + s)",
	}, "\n")
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		execute(program),
		execute("print(open('creds.txt').read())"),
		reply(answer{Calls: []call{{Name: "list_files", Args: `{}`}, {Name: "read_file", Args: `{"path": "creds.txt"}`}}}),
		final("the key was printed"),
	}})

	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rc := policy.DefaultRedactConfig()
	rc.Secrets = []string{secret}
	red, err := policy.NewRedactor(rc)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(service.Config{Runtime: nativeRuntime(t), Store: st, Redactor: red,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Shutdown(context.Background())

	id := agent.NewRunID()
	trace := h.run(t, agent.Config{ID: id, Sandbox: svc.SessionRuntime("default", id)}, agent.Task{Prompt: "Print the credentials."})
	if trace.Status != agent.StatusAnswered {
		t.Fatalf("trace status %s (%s)", trace.Status, trace.Reason)
	}
	reqs := h.model.all()
	if len(reqs) < 4 {
		t.Fatalf("the model got %d requests, want the whole script", len(reqs))
	}
	sawRedacted := false
	for i, r := range reqs {
		for _, leak := range []string{secret, awsKey} {
			if strings.Contains(string(r.Body), leak) {
				j := strings.Index(string(r.Body), leak)
				t.Errorf("request %d (%s) to the model holds %q: …%s…", i, r.Role, leak, string(r.Body)[max(0, j-150):min(len(r.Body), j+60)])
			}
		}
		sawRedacted = sawRedacted || strings.Contains(string(r.Body), "REDACTED")
	}
	if !sawRedacted {
		t.Error("no request shows a redaction: the program's output never reached the model?")
	}

	runs, _, err := svc.List(context.Background(), "default", store.Filter{AgentRun: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d run records of agent run %s, want its 2 executions", len(runs), id)
	}
	for _, r := range runs {
		if r.SessionID == "" || r.CodeHash == "" || r.Limits.MemoryBytes == 0 || r.FinishedAt == nil {
			t.Errorf("record %+v lacks its session, code hash, limits or end", r)
		}
		for _, leak := range []string{secret, awsKey} {
			if strings.Contains(string(r.Stdout)+string(r.Stderr), leak) || (r.Error != nil && strings.Contains(r.Error.Message+r.Error.Traceback, leak)) {
				t.Errorf("record %s holds %q", r.ID, leak)
			}
		}
	}
}
