package service_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// TestAgentRunAnswers follows an agent run from start to answer against
// a scripted model (see scriptedModel) and a fake runtime: the events
// come in order with increasing IDs, the program's output is streamed
// (redacted), and the trace holds the run without the provider's key or
// the secret the program printed.
func TestAgentRunAnswers(t *testing.T) {
	ctx := context.Background()
	code := `print("the answer is 42, key ` + secret + `")`
	// The model answers once the test follows the run: an agent run that
	// ended keeps no output for a follower that comes late.
	model := gatedModel{Provider: scriptedModel(t, "42", code), open: make(chan struct{})}
	svc := agentService(t, model, nil)
	run, err := svc.StartAgentRun(ctx, "acme", api.AgentRunRequest{Task: "compute the answer", TextMode: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != api.AgentRunning || !strings.HasPrefix(run.ID, "agt_") || run.Model != "openai:scripted" || run.Image != service.DefaultImageName {
		t.Fatalf("started %+v", run)
	}
	var opened sync.Once
	events := follow(t, svc, "acme", run.ID, func(service.Event) bool {
		opened.Do(func() { close(model.open) })
		return true
	})
	want := []service.EventKind{service.EventAgentRun, service.EventStep, service.EventCode, service.EventStdout, service.EventExecution, service.EventResult}
	for _, k := range want {
		if !strings.Contains(" "+kinds(events)+" ", " "+string(k)+" ") {
			t.Errorf("no %s event in %s", k, kinds(events))
		}
	}
	var last int64
	var stdout string
	for _, e := range events {
		if e.ID <= last {
			t.Errorf("event %s has id %d after %d", e.Kind, e.ID, last)
		}
		last = e.ID
		if e.Kind == service.EventStdout {
			stdout += string(e.Output)
		}
	}
	if !strings.Contains(stdout, "the answer is 42") || strings.Contains(stdout, secret) {
		t.Errorf("streamed stdout %q: want the program's output, redacted", stdout)
	}
	end := events[len(events)-1].Agent.Run
	if end.Status != "answered" || end.Answer != "42" || end.FinishedAt == nil || len(end.Trace) == 0 {
		t.Fatalf("result: status %s, answer %q, finished %v, trace of %d bytes; want answered, 42, a time, the trace", end.Status, end.Answer, end.FinishedAt, len(end.Trace))
	}
	got, err := svc.AgentRun("acme", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	trace := string(got.Trace)
	if !strings.Contains(trace, `"status":"answered"`) || !strings.Contains(trace, "the answer is 42") {
		t.Errorf("trace lacks the run: %s", trace)
	}
	for _, hidden := range []string{providerKey, secret} {
		if strings.Contains(trace, hidden) {
			t.Errorf("the trace holds %q: %s", hidden, trace)
		}
	}
	if list, next, err := svc.AgentRuns(ctx, "acme", service.AgentRunPage{}); err != nil || next != "" || len(list) != 1 || list[0].ID != run.ID || list[0].Trace != nil {
		t.Errorf("AgentRuns = %+v, %q, %v; want the run without its trace", list, next, err)
	}
	if _, err := svc.AgentRun("other", run.ID); kindOf(err) != service.KindNotFound {
		t.Errorf("another tenant's AgentRun: %v, want KindNotFound", err)
	}
	recs, _, err := svc.List(ctx, "acme", store.Filter{AgentRun: run.ID})
	if err != nil || len(recs) != 1 || strings.Contains(recs[0].Code, secret) {
		t.Errorf("records of the agent run: %v, %+v; want its one execution, code redacted", err, recs)
	}
}

// TestAgentRunRefusedInput: bad requests are refused before anything
// runs, naming the field; without a model, agent runs are not
// configured, naming "model".
func TestAgentRunRefusedInput(t *testing.T) {
	svc := agentService(t, scriptedModel(t, "1", "print(1)"), func(c *service.Config) {
		c.Maxima.WallTimeMS, c.Maxima.MemoryBytes = 5000, 1<<30
		c.Agents.Maxima = service.AgentBudgets{MaxRetries: 2, MaxTokens: 1000}
	})
	three, minus := 3, -2
	for _, tc := range []struct {
		name  string
		req   api.AgentRunRequest
		field string
	}{
		{"empty task", api.AgentRunRequest{Task: "  "}, "task"},
		{"retries above the cap", api.AgentRunRequest{Task: "t", MaxRetries: &three}, "max_retries"},
		{"negative retries", api.AgentRunRequest{Task: "t", MaxRetries: &minus}, "max_retries"},
		{"tokens above the cap", api.AgentRunRequest{Task: "t", MaxTokens: 1001}, "max_tokens"},
		{"negative exec time", api.AgentRunRequest{Task: "t", MaxExecMS: -1}, "max_exec_ms"},
		{"cell timeout above the wall time", api.AgentRunRequest{Task: "t", CellTimeoutMS: 5001}, "cell_timeout_ms"},
		{"memory above the maximum", api.AgentRunRequest{Task: "t", Limits: sandbox.Limits{MemoryBytes: 2 << 30}}, "limits.memory_bytes"},
		{"unknown image", api.AgentRunRequest{Task: "t", Image: "nope"}, "image"},
		{"file outside the directory", api.AgentRunRequest{Task: "t", Files: []sandbox.File{{Name: "../x", Content: sandbox.Data("1")}}}, "files[0].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.StartAgentRun(context.Background(), "acme", tc.req, nil)
			var ie *sandbox.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("err %v, want an input error naming %s", err, tc.field)
			}
		})
	}
	if list, _, err := svc.AgentRuns(context.Background(), "acme", service.AgentRunPage{}); err != nil || len(list) != 0 {
		t.Errorf("refused runs are listed: %+v, %v", list, err)
	}

	noModel := newService(t, printRuntime{}, nil)
	_, err := noModel.StartAgentRun(context.Background(), "acme", api.AgentRunRequest{Task: "t"}, nil)
	var se *service.Error
	if !errors.As(err, &se) || se.Kind != service.KindNotConfigured || se.Field != "model" {
		t.Fatalf("without a model: %v, want KindNotConfigured naming model", err)
	}
}
