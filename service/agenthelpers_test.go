package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// providerKey is the scripted model's API key: it must appear in no
// answer of the service.
const providerKey = "sk-provider-key-never-shown-0123456789"

// secret is a value the tests' redaction policy hides.
const secret = "hunter2-secret-value"

// scriptedModel is the model of the tests: a local server speaking the
// OpenAI wire format from a script (llmtest.OpenAI), as no model can run
// here; the coder sends codes in turn, then answer.
func scriptedModel(t *testing.T, answer string, codes ...string) llm.Provider {
	t.Helper()
	srv := llmtest.OpenAI(t, llmtest.Script{Key: providerKey, Codes: codes, Answer: answer})
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1", APIKey: providerKey})
	if err != nil {
		t.Fatal(err)
	}
	return model
}

// gatedModel is a model whose first reply waits until open is closed: a
// test that must see an agent run's output as it streams (an ended agent
// run keeps none, feed.dropOutput) opens it once it follows the run.
type gatedModel struct {
	llm.Provider
	open chan struct{}
}

func (g gatedModel) Complete(ctx context.Context, req llm.Request) (llm.Reply, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return llm.Reply{}, ctx.Err()
	}
	return g.Provider.Complete(ctx, req)
}

// printRuntime is a fake runtime whose session cells print their code
// through OnOutput, as a program prints while it runs, and answer it as
// stdout.
type printRuntime struct{}

func (printRuntime) Run(context.Context, sandbox.Request) (sandbox.Result, error) {
	return sandbox.Result{}, fmt.Errorf("printRuntime runs no stateless runs")
}

func (printRuntime) NewSession(_ context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return &printSession{id: fmt.Sprintf("ses_%d", time.Now().UnixNano())}, nil
}

type printSession struct{ id string }

func (s *printSession) ID() string { return s.id }
func (s *printSession) Exec(_ context.Context, c sandbox.Cell) (sandbox.Result, error) {
	if c.OnOutput != nil {
		c.OnOutput(sandbox.StreamStdout, []byte(c.Code+"\n"))
	}
	return sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data(c.Code + "\n"), Language: sandbox.Python}, nil
}
func (s *printSession) WriteFile(context.Context, string, []byte) error       { return nil }
func (s *printSession) ReadFile(context.Context, string) ([]byte, error)      { return nil, nil }
func (s *printSession) ListFiles(context.Context) ([]sandbox.FileInfo, error) { return nil, nil }
func (s *printSession) Close() error                                          { return nil }

// agentService returns a service on printRuntime whose agents use model
// and whose redaction hides secret; adjust, if set, changes the config.
func agentService(t *testing.T, model llm.Provider, adjust func(*service.Config)) *service.Service {
	t.Helper()
	return newService(t, printRuntime{}, func(c *service.Config) {
		rc := policy.DefaultRedactConfig()
		rc.Secrets = []string{secret}
		red, err := policy.NewRedactor(rc)
		if err != nil {
			t.Fatal(err)
		}
		c.Redactor, c.Agents.Model = red, model
		if adjust != nil {
			adjust(c)
		}
	})
}

// follow passes the events of tenant's agent run id to each, from the
// first, until the run ends or each returns false; it returns them all.
func follow(t *testing.T, svc *service.Service, tenant, id string, each func(service.Event) bool) []service.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events, err := svc.AgentRunEvents(ctx, tenant, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var all []service.Event
	for e := range events {
		all = append(all, e)
		if each != nil && !each(e) {
			break
		}
	}
	return all
}

// kinds names the events' kinds, in order.
func kinds(events []service.Event) string {
	var names []string
	for _, e := range events {
		names = append(names, string(e.Kind))
	}
	return strings.Join(names, " ")
}
