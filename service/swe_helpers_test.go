package service_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// bugRepo is a tiny repository with a one-line bug and pytest tests: add
// subtracts (test_add fails), mul is right (test_mul passes). NOTES.md
// holds the secret, which the scripted fixer's first command prints.
var bugRepo = map[string]string{
	"calc.py":      "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
	"test_calc.py": "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
	"NOTES.md":     "deploy key: " + secret + "\n",
}

// tarGz packs files as a gzip'd tar, as a client uploads a repository.
func tarGz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, content); err != nil {
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

// fixerCalls are what a model that fixes bugRepo does: it reads the code
// (and the notes), replaces the bug, and submits.
var fixerCalls = []llmtest.Call{
	{Name: "bash", Args: map[string]string{"command": "cat calc.py NOTES.md"}},
	{Name: "edit", Args: map[string]string{"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "return a + b"}},
	{Name: "submit", Args: map[string]string{}},
}

// sweModel is a scripted model making calls (llmtest.OpenAICalls: a
// local server speaking the OpenAI wire format, as no model can run
// here).
func sweModel(t testing.TB, calls ...llmtest.Call) llm.Provider {
	t.Helper()
	srv := llmtest.OpenAICalls(t, providerKey, calls...)
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1", APIKey: providerKey})
	if err != nil {
		t.Fatal(err)
	}
	return model
}

// sweService is a service on the data-science image (bash, git, patch,
// pytest; it needs root and the image) with store st, model, and a
// redaction that hides secret; it is shut down when the test ends.
func sweService(t *testing.T, st store.Store, model llm.Provider) *service.Service {
	t.Helper()
	return sweServiceWith(t, st, model, nil)
}

// sweServiceWith is sweService, adjust (if set) changing its config.
func sweServiceWith(t testing.TB, st store.Store, model llm.Provider, adjust func(*service.Config)) *service.Service {
	t.Helper()
	return sweServiceOn(t, dataScienceRuntime(t), st, model, adjust)
}

// sweServiceOn is sweServiceWith on runtime rt.
func sweServiceOn(t testing.TB, rt service.Runtime, st store.Store, model llm.Provider, adjust func(*service.Config)) *service.Service {
	t.Helper()
	rc := policy.DefaultRedactConfig()
	rc.Secrets = []string{secret}
	red, err := policy.NewRedactor(rc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := service.Config{Runtime: rt, Store: st, Redactor: red, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Agents.Model = model
	if adjust != nil {
		adjust(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
	})
	return svc
}

// followFor is follow with a longer wait: a swe run opens sessions and
// runs the tests three times.
func followFor(t *testing.T, svc *service.Service, tenant, id string, each func(service.Event) bool) []service.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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
