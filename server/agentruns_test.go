package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/service"
)

// providerKey is the scripted model's key: no answer may show it.
const providerKey = "sk-provider-key-of-the-server-0123456789"

// newAgentServer starts a server on a fake runtime (no root needed) whose
// agents use a scripted model: a local server speaking the OpenAI wire
// format from a script (llmtest.OpenAI), since no model can run here.
// adjust, if set, changes the service's agent config.
func newAgentServer(t *testing.T, adjust func(*service.AgentConfig)) *testServer {
	t.Helper()
	srv := llmtest.OpenAI(t, llmtest.Script{Key: providerKey, Codes: []string{"print(6*7)"}, Answer: "42"})
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1", APIKey: providerKey})
	if err != nil {
		t.Fatal(err)
	}
	return newFakeServer(t, &imageRuntime{name: "default"}, func(c *config) {
		c.Agents.Model = model
		if adjust != nil {
			adjust(&c.Agents)
		}
	})
}

// TestAgentRunAPI drives an agent run that asks for approval through the
// API: 202 with the run, its events live with ids (the approval with the
// code and its id), the run awaiting approval in GET, a decision (wrong
// ids and a second decision refused), the result, the trace in GET
// without the provider's key, the listing, resumption after an id.
func TestAgentRunAPI(t *testing.T) {
	ts := newAgentServer(t, nil)
	r := ts.do("POST", "/v1/agent-runs", map[string]any{"task": "what is 6 times 7?", "text_mode": true, "approve": true, "max_retries": 1})
	if r.status != http.StatusAccepted {
		t.Fatalf("POST /v1/agent-runs: %d %s", r.status, r.body)
	}
	var run api.AgentRun
	r.json(t, &run)
	if run.Status != api.AgentRunning || r.header.Get("Location") != "/v1/agent-runs/"+run.ID {
		t.Fatalf("accepted %+v, Location %q", run, r.header.Get("Location"))
	}
	base := "/v1/agent-runs/" + run.ID

	resp := ts.open("GET", base+"/events", nil, nil)
	defer resp.Body.Close()
	sc := newEventScanner(resp.Body)
	var approval api.AgentApproval
	for {
		e, ok := ts.next(sc)
		if !ok {
			t.Fatal("the stream ended before the approval")
		}
		if e.name == "approval" {
			if err := json.Unmarshal(e.data, &approval); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if approval.Code != "print(6*7)" || approval.ID == "" {
		t.Fatalf("approval %+v", approval)
	}
	var waiting api.AgentRun
	ts.do("GET", base, nil).json(t, &waiting)
	if waiting.Status != api.AgentAwaitingApproval || waiting.PendingApproval == nil || waiting.PendingApproval.ID != approval.ID {
		t.Errorf("GET while waiting: %+v", waiting)
	}
	ts.do("POST", base+"/approvals/apr_0000000000000000", map[string]any{"approve": true}).wantError(t, 404, api.CodeNotFound)
	if e := ts.do("POST", base+"/approvals/"+approval.ID, map[string]any{"reason": "?"}).wantError(t, 400, api.CodeInvalidRequest); e.Error.Field != "approve" {
		t.Errorf("a decision without approve: field %q", e.Error.Field)
	}
	var d api.AgentDecision
	if r := ts.do("POST", base+"/approvals/"+approval.ID, map[string]any{"approve": true, "reason": "fine"}); r.status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.status, r.body)
	} else {
		r.json(t, &d)
	}
	if !d.Approved || d.By != "api" || d.Reason != "fine" {
		t.Errorf("decision %+v", d)
	}
	ts.do("POST", base+"/approvals/"+approval.ID, map[string]any{"approve": false}).wantError(t, 409, api.CodeConflict)

	rest := ts.readAll(sc)
	want := []string{"approval_decision", "code", "execution", "result"}
	for _, name := range want {
		if !strings.Contains(strings.Join(names(rest), " "), name) {
			t.Errorf("events after the approval %v lack %s", names(rest), name)
		}
	}
	var end api.AgentRun
	if err := json.Unmarshal(rest[len(rest)-1].data, &end); err != nil || end.Status != "answered" || end.Answer != "42" {
		t.Fatalf("result %s: %v", rest[len(rest)-1].data, err)
	}

	got := ts.do("GET", base, nil)
	var ended api.AgentRun
	got.json(t, &ended)
	if ended.Status != "answered" || !strings.Contains(string(ended.Trace), `"answer":"42"`) {
		t.Errorf("GET after the end: %s", got.body)
	}
	if strings.Contains(string(got.body), providerKey) {
		t.Errorf("GET shows the provider's key: %s", got.body)
	}
	var list api.AgentRunList
	ts.do("GET", "/v1/agent-runs", nil).json(t, &list)
	if len(list.AgentRuns) != 1 || list.AgentRuns[0].ID != run.ID || list.AgentRuns[0].Trace != nil || list.Next != "" {
		t.Errorf("list %+v", list)
	}

	all := ts.events("GET", base+"/events", nil)
	after := all[len(all)-3]
	resumed := ts.open("GET", base+"/events", nil, http.Header{"Last-Event-ID": {after.id}})
	tail := ts.readAll(newEventScanner(resumed.Body))
	resumed.Body.Close()
	if strings.Join(names(tail), " ") != strings.Join(names(all[len(all)-2:]), " ") {
		t.Errorf("resumed after %s: %v, want %v", after.id, names(tail), names(all[len(all)-2:]))
	}
	if r := ts.do("GET", base+"/events?after="+all[len(all)-1].id, nil); r.status != http.StatusNoContent {
		t.Errorf("after the result: %d, want 204", r.status)
	}
	var cancelled api.AgentRun
	ts.do("DELETE", base, nil).json(t, &cancelled)
	if cancelled.Status != "answered" {
		t.Errorf("DELETE of an ended run: %+v, want it as it ended", cancelled)
	}
}

// TestAgentRunStream: POST ?stream=1 answers the run's events, from the
// run to its result.
func TestAgentRunStream(t *testing.T) {
	ts := newAgentServer(t, nil)
	events := ts.stream("/v1/agent-runs?stream=1", map[string]any{"task": "what is 6 times 7?", "text_mode": true})
	got := names(events)
	if len(got) < 3 || got[0] != "agent_run" || got[len(got)-1] != "result" || !strings.Contains(strings.Join(got, " "), "code") {
		t.Fatalf("events %v", got)
	}
}

// TestAgentRunRefusals: a request naming the model's key or endpoint, or
// a budget above the server's maximum, is refused naming the field; an
// unknown run is 404; without a model every agent endpoint answers 501
// naming "model".
func TestAgentRunRefusals(t *testing.T) {
	ts := newAgentServer(t, func(c *service.AgentConfig) { c.Maxima.MaxTokens = 1000 })
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
		rule  string
	}{
		{"a key", map[string]any{"task": "t", "api_key": "sk-mine"}, "api_key", "server's configuration"},
		{"a base URL", map[string]any{"task": "t", "base_url": "http://evil.example/v1"}, "base_url", "server's configuration"},
		{"a model", map[string]any{"task": "t", "model": "gpt-5"}, "model", "server's configuration"},
		{"tokens above the cap", map[string]any{"task": "t", "max_tokens": 1001}, "max_tokens", "at most 1000 tokens"},
		{"no task", map[string]any{"text_mode": true}, "task", "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ts.do("POST", "/v1/agent-runs", tc.body).wantError(t, 400, api.CodeInvalidRequest)
			if e.Error.Field != tc.field || !strings.Contains(e.Error.Rule, tc.rule) {
				t.Errorf("error %+v, want field %s and a rule saying %q", e.Error, tc.field, tc.rule)
			}
		})
	}
	ts.do("GET", "/v1/agent-runs/agt_0000000000000000", nil).wantError(t, 404, api.CodeNotFound)
	ts.do("POST", "/v1/agent-runs/agt_0000000000000000/approvals/apr_1", map[string]any{"approve": true}).wantError(t, 404, api.CodeNotFound)
	ts.do("DELETE", "/v1/agent-runs/agt_0000000000000000", nil).wantError(t, 404, api.CodeNotFound)
	for _, tc := range []struct{ query, field string }{{"limit=0", "limit"}, {"limit=x", "limit"}, {"cursor=nope", "cursor"}} {
		if e := ts.do("GET", "/v1/agent-runs?"+tc.query, nil).wantError(t, 400, api.CodeInvalidRequest); e.Error.Field != tc.field {
			t.Errorf("GET /v1/agent-runs?%s: field %q, want %s", tc.query, e.Error.Field, tc.field)
		}
	}

	none := newFakeServer(t, &imageRuntime{name: "default"}, nil)
	for _, req := range []struct{ method, path string }{
		{"POST", "/v1/agent-runs"}, {"GET", "/v1/agent-runs"}, {"GET", "/v1/agent-runs/agt_1"},
		{"GET", "/v1/agent-runs/agt_1/events"}, {"POST", "/v1/agent-runs/agt_1/approvals/apr_1"}, {"DELETE", "/v1/agent-runs/agt_1"},
	} {
		e := none.do(req.method, req.path, map[string]any{"task": "t"}).wantError(t, 501, api.CodeNotConfigured)
		if e.Error.Field != "model" {
			t.Errorf("%s %s without a model: field %q, want model", req.method, req.path, e.Error.Field)
		}
	}
}
