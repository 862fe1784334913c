package server_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/swe"
)

// bugRepoTarGz is a tiny repository with a one-line bug (add subtracts)
// and its pytest tests (test_add fails, test_mul passes), as a gzip'd
// tar.
func bugRepoTarGz(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range [][2]string{
		{"calc.py", "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"},
		{"test_calc.py", "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fixerCalls fix bugRepoTarGz's bug and submit.
var fixerCalls = []llmtest.Call{
	{Name: "view", Args: map[string]any{"path": "calc.py"}},
	{Name: "edit", Args: map[string]string{"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "return a + b"}},
	{Name: "submit", Args: map[string]string{}},
}

// sweServer starts a server on the data-science image (it needs root and
// the image) whose model makes calls (llmtest.OpenAICalls: a local
// server speaking the OpenAI wire format, as no model can run here), its
// body limit 1 MiB; adjust, if set, changes its config.
func sweServer(t *testing.T, adjust func(*config), calls ...llmtest.Call) *testServer {
	t.Helper()
	testenv.Root(t)
	img := testenv.Image(t, "datascience")
	rt, err := linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	srv := llmtest.OpenAICalls(t, providerKey, calls...)
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1", APIKey: providerKey})
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	cfg := config{}
	cfg.Runtime, cfg.Store, cfg.Agents.Model, cfg.MaxBodyBytes = rt, st, model, 1<<20
	if adjust != nil {
		adjust(&cfg)
	}
	s, svc := newServer(t, cfg)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &testServer{T: t, srv: s, svc: svc, http: hs, store: st}
}

// TestSWERunAPI drives a swe run through the HTTP API, end to end in real
// sessions: POST ?stream=1 answers its events, from the run (mode swe)
// through the agent's steps and its commands to the result, resolved
// with the diff and the tests before and after; GET serves the outcome
// and the trace; the listing shows it; another tenant gets 404.
func TestSWERunAPI(t *testing.T) {
	ts := sweServer(t, nil, fixerCalls...)
	acme, other := ts.as(ts.newKey("acme")), ts.as(ts.newKey("other"))
	body := map[string]any{"task": "fix the failing test in test_calc.py", "mode": "swe",
		"repo": map[string]any{"format": "tar", "archive": bugRepoTarGz(t)}, "tests": []string{"test_calc.py::test_add"}}
	events := acme.stream("/v1/agent-runs?stream=1", body)
	got := names(events)
	if len(got) < 3 || got[0] != "agent_run" || got[len(got)-1] != "result" || !slices.Contains(got, "step") || !slices.Contains(got, "code") || !slices.Contains(got, "execution") {
		t.Fatalf("events %v", got)
	}
	var start, end api.AgentRun
	if err := json.Unmarshal(events[0].data, &start); err != nil || start.Mode != api.ModeSWE {
		t.Fatalf("first event %s: %v", events[0].data, err)
	}
	if err := json.Unmarshal(events[len(events)-1].data, &end); err != nil {
		t.Fatal(err)
	}
	if end.Status != api.AgentRunStatus(swe.StatusResolved) || end.SWE == nil || !strings.Contains(end.SWE.Diff, "+    return a + b") ||
		end.SWE.Before == nil || end.SWE.Before.Failed != 1 || end.SWE.After == nil || end.SWE.After.Failed != 0 ||
		!slices.Equal(end.SWE.FailToPass, []string{"test_calc.py::test_add"}) {
		t.Fatalf("result %s", events[len(events)-1].data)
	}
	var read api.AgentRun
	acme.do("GET", "/v1/agent-runs/"+end.ID, nil).json(t, &read)
	if read.Mode != api.ModeSWE || read.SWE == nil || read.SWE.Diff != end.SWE.Diff || !strings.Contains(string(read.Trace), `"steps"`) {
		t.Errorf("GET: mode %q, outcome %+v, trace %.200s", read.Mode, read.SWE, read.Trace)
	}
	var list api.AgentRunList
	acme.do("GET", "/v1/agent-runs", nil).json(t, &list)
	if len(list.AgentRuns) != 1 || list.AgentRuns[0].Status != "resolved" || list.AgentRuns[0].Trace != nil {
		t.Errorf("list %+v", list)
	}
	other.do("GET", "/v1/agent-runs/"+end.ID, nil).wantError(t, 404, api.CodeNotFound)
	other.do("GET", "/v1/agent-runs/"+end.ID+"/events", nil).wantError(t, 404, api.CodeNotFound)
}

// TestSWERunRequestRefusals: over HTTP, a bad mode or swe request is
// refused naming the field, and POST /v1/agent-runs takes a body above
// the server's body limit (1 MiB here) for a repository, while every
// other route keeps that limit. No root needed.
func TestSWERunRequestRefusals(t *testing.T) {
	ts := newAgentServer(t, nil)
	small := newFakeServer(t, &imageRuntime{name: "default"}, func(c *config) {
		c.MaxBodyBytes = 1 << 20
		c.Agents.Model = mustModel(t)
	})
	junk := make([]byte, 3<<19) // 1.5 MiB, more in base64: over the body limit
	if _, err := rand.Read(junk); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		ts     *testServer
		path   string
		body   any
		status int
		field  string
	}{
		{"unknown mode", ts, "/v1/agent-runs", map[string]any{"task": "t", "mode": "sql"}, 400, "mode"},
		{"swe without repo", ts, "/v1/agent-runs", map[string]any{"task": "t", "mode": "swe"}, 400, "repo"},
		{"archive not base64", ts, "/v1/agent-runs", map[string]any{"task": "t", "mode": "swe", "repo": map[string]any{"archive": "%%%"}}, 400, "repo.archive"},
		{"unknown repo field", ts, "/v1/agent-runs", map[string]any{"task": "t", "mode": "swe", "repo": map[string]any{"archive": "", "path": "/etc"}}, 400, "repo.path"},
		{"code with tests", ts, "/v1/agent-runs", map[string]any{"task": "t", "tests": []string{"a.py"}}, 400, "tests"},
		{"swe with files", ts, "/v1/agent-runs", map[string]any{"task": "t", "mode": "swe", "files": []any{}, "repo": map[string]any{"archive": bugRepoTarGz(t)}}, 400, "files"},
		{"a large repository read, then judged", small, "/v1/agent-runs", map[string]any{"task": "t", "mode": "swe", "repo": map[string]any{"archive": junk}}, 400, "repo.archive"},
		{"other routes keep the limit", small, "/v1/runs", map[string]any{"language": "python", "code": "print(1)", "stdin": string(bytes.Repeat([]byte("a"), 3<<19))}, 413, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := api.CodeInvalidRequest
			if tc.status == 413 {
				code = api.CodePayloadTooLarge
			}
			if e := tc.ts.do("POST", tc.path, tc.body).wantError(t, tc.status, code); e.Error.Field != tc.field {
				t.Errorf("field %q (%s), want %q", e.Error.Field, e.Error.Rule, tc.field)
			}
		})
	}
	svc := small.svc
	if got := svc.MaxAgentRunBodyBytes("acme"); got != service.SWERequestBytes || got <= svc.MaxBodyBytes("acme") {
		t.Errorf("MaxAgentRunBodyBytes = %d, want SWERequestBytes %d (the body limit is %d)", got, service.SWERequestBytes, svc.MaxBodyBytes("acme"))
	}
	if _, err := svc.ReserveAgentRunPayload(context.Background(), "acme", service.SWERequestBytes+1); err == nil {
		t.Error("a body over SWERequestBytes was reserved")
	}
	p, err := svc.ReserveAgentRunPayload(context.Background(), "acme", service.SWERequestBytes)
	if err != nil {
		t.Fatalf("a body of SWERequestBytes: %v", err)
	}
	p.Release()
	if r := small.do("POST", "/v1/agent-runs", bytes.Repeat([]byte(" "), 2<<20)); r.status == http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB body to /v1/agent-runs: 413, want it read")
	}
}

// mustModel is a scripted model for requests refused before it is asked.
func mustModel(t *testing.T) llm.Provider {
	t.Helper()
	srv := llmtest.OpenAICalls(t, providerKey, llmtest.Call{Name: "submit", Args: map[string]string{}})
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1", APIKey: providerKey})
	if err != nil {
		t.Fatal(err)
	}
	return model
}
