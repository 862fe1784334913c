package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// syncBuffer is a bytes.Buffer safe for a process's writes and a test's
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// servedAddr finds the listen address in crucible serve's log.
var servedAddr = regexp.MustCompile(`\baddr=(127\.0\.0\.1:[0-9]+)`)

// startServe starts this test binary as `crucible serve` on a free
// loopback port offering image with config, waits until it serves, and returns a client
// of it and its base URL; it is stopped (SIGTERM) when t ends.
func startServe(t *testing.T, image, config string, env ...string) (c *client.Client, base string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.json")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ = serveProcess(t, []string{"--image", image, "--prestart", "0", "--config", cfg}, env...)
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	return c, base
}

// serveProcess starts this test binary as `crucible serve` with args on
// a free loopback port, with env added to its environment, waits until
// it serves, and returns its base URL and its log (stdout and stderr);
// it is stopped (SIGTERM) when t ends.
func serveProcess(t *testing.T, args []string, env ...string) (base string, logs *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "runs.db")}, args...)...)
	cmd.Env = append(append(os.Environ(), "CRUCIBLE_TEST_MAIN=1"), env...)
	logs = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("crucible serve's log:\n%s", logs.String())
		}
	})
	for {
		if m := servedAddr.FindStringSubmatch(logs.String()); m != nil {
			return "http://" + m[1], logs
		}
		select {
		case err := <-exited:
			t.Fatalf("crucible serve exited (%v):\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestServeAgentRuns drives code-agent runs through a real `crucible
// serve` and sandbox (root) whose model is configured in --config, its
// key in an environment variable; the model is scripted: a local server
// speaking the OpenAI wire format from a script (llmtest.OpenAI), as no
// model can run here. It checks the refusals (a key or a model in the
// request, a budget above the server's cap), then one run whose program
// is approved (its live output, the trace, the execution's record) and
// one whose program is refused (denied, with the reason), an unknown
// approval and a second decision.
func TestServeAgentRuns(t *testing.T) {
	testenv.Root(t)
	const key, secret = "sk-scripted-model-key-0123456789", "hunter2-secret-value"
	model := llmtest.OpenAI(t, llmtest.Script{Key: key, Answer: "the data sums to 6",
		Codes: []string{`print(sum(int(x) for x in open("data.csv").read().split(",")), "` + secret + `")`}})
	c, base := startServe(t, "host", fmt.Sprintf(`{"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"},
		"agents": {"maxima": {"max_retries": 2}}, "redact": {"secrets": [%q]}}`, model.URL+"/v1", secret),
		"CRUCIBLE_TEST_MODEL_KEY="+key)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, tc := range []struct {
		name, body, field string
	}{
		{"a key", `{"task": "t", "api_key": "sk-mine-0123456789"}`, "api_key"},
		{"a base URL", `{"task": "t", "base_url": "http://elsewhere/v1"}`, "base_url"},
		{"retries above the cap", `{"task": "t", "max_retries": 5}`, "max_retries"},
	} {
		resp, err := http.Post(base+"/v1/agent-runs", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var e api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Error.Field != tc.field {
			t.Errorf("%s: %d %+v, want 400 naming %s", tc.name, resp.StatusCode, e.Error, tc.field)
		}
	}

	task := api.AgentRunRequest{Task: "sum the numbers in data.csv", TextMode: true, Approve: true,
		Files: []sandbox.File{{Name: "data.csv", Content: sandbox.Data("1,2,3")}}}
	for _, tc := range []struct {
		name       string
		approve    bool
		wantStatus api.AgentRunStatus
		wantOutput string
	}{
		{"approved", true, "answered", "6 [REDACTED:secret]\n"},
		{"refused", false, "denied", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := c.StartAgentRun(ctx, task)
			if err != nil {
				t.Fatal(err)
			}
			var output strings.Builder
			var events []string
			end, err := c.FollowAgentRun(ctx, run.ID, func(e client.AgentEvent) {
				events = append(events, e.Kind)
				switch e.Kind {
				case "approval":
					if _, err := c.Approve(ctx, run.ID, "apr_0000000000000000", true, ""); !client.IsNotFound(err) {
						t.Errorf("an unknown approval: %v, want 404", err)
					}
					if _, err := c.Approve(ctx, run.ID, e.Approval.ID, tc.approve, "decided in the test"); err != nil {
						t.Errorf("Approve: %v", err)
					}
					var ae *client.APIError
					if _, err := c.Approve(ctx, run.ID, e.Approval.ID, true, ""); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
						t.Errorf("a second decision: %v, want 409", err)
					}
				case "stdout":
					output.Write(e.Output)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("events: %s", strings.Join(events, " "))
			if end.Status != tc.wantStatus || output.String() != tc.wantOutput {
				t.Fatalf("ended %s (%s) with output %q; want %s with %q", end.Status, end.Reason, output.String(), tc.wantStatus, tc.wantOutput)
			}
			got, err := c.GetAgentRun(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			trace := string(got.Trace)
			if !strings.Contains(trace, `"status":"`+string(tc.wantStatus)+`"`) || strings.Contains(trace, key) || strings.Contains(trace, secret) {
				t.Errorf("trace: want the status, neither the key nor the secret: %s", trace)
			}
			if tc.approve {
				runs, _, err := c.ListRuns(ctx, client.ListOptions{})
				if err != nil || len(runs) == 0 || runs[0].AgentRun != run.ID || runs[0].Status != sandbox.StatusOK {
					t.Errorf("the execution's record: %v, %+v", err, runs)
				}
			} else if !strings.Contains(end.Reason, "refused: decided in the test") {
				t.Errorf("reason %q lacks the refusal", end.Reason)
			}
		})
	}
}
