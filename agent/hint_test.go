package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/hint"
	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/service"
)

// TestHintsReachTheModel drives the agent through the service, with the
// hints of a store holding one image (web) that has requests, against the
// scripted model server. The coder imports requests, then resolves a
// name, in the real sandbox on the host's system directories: the tool
// results the model receives, in the very request bodies, carry each
// error's hint.
func TestHintsReachTheModel(t *testing.T) {
	const (
		missing = `hint: Python module "requests" is not installed in the host's system directories, and the sandbox cannot install packages (it has no network). The web image has it: --image web.`
		offline = "hint: The network is off in this sandbox by policy: names do not resolve and no host outside can be reached."
	)
	inBody := func(want string) func(t *testing.T, req *request) {
		return func(t *testing.T, req *request) {
			b, _ := json.Marshal(want) // as the body holds it
			if !strings.Contains(string(req.Body), strings.Trim(string(b), `"`)) {
				t.Errorf("the request body lacks %q:\n%s", want, req.Body)
			}
		}
	}
	h := newHarness(t, wireOpenAI, script{Coder: []turn{
		execute("import requests"),
		checked(lastIs("tool", "error: ModuleNotFoundError: No module named 'requests'", missing), checked(inBody(missing),
			execute("import socket\nsocket.getaddrinfo('example.com', 80)"))),
		checked(lastIs("tool", "error: socket.gaierror", offline), checked(inBody(offline), execute("print(42)"))),
		final("42"),
	}})

	store := t.TempDir()
	root := filepath.Join(store, "web", "rootfs")
	if err := os.MkdirAll(filepath.Join(root, "usr/lib/python3/dist-packages/requests"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(image.Image{Name: "web", RootFS: root, Digest: "sha256:web"})
	if err := os.WriteFile(filepath.Join(store, "web", "image.json"), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(service.Config{Runtime: nativeRuntime(t), Redactor: red, Hints: hint.New(hint.Config{Store: store}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Shutdown(context.Background())

	id := agent.NewRunID()
	trace := h.run(t, agent.Config{ID: id, Sandbox: svc.SessionRuntime("default", id)}, agent.Task{Prompt: "Fetch the data and print 42."})
	if trace.Status != agent.StatusAnswered || trace.Answer != "42" {
		t.Errorf("trace status %s (%s), answer %q; want answered 42\n%s", trace.Status, trace.Reason, trace.Answer, dump(trace))
	}
}
