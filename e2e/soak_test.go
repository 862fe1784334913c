package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// soak turns TestSoak on: `go test ./e2e/ -run TestSoak -soak`, or
// scripts/test.sh --soak. It takes a few minutes.
var soak = flag.Bool("soak", false, "run the API soak (3 000 mixed requests)")

// soakCase is one kind of request of the soak: what to send and what a
// right answer is.
type soakCase struct {
	name string
	do   func(srv soakSender) error
}

// soakSender sends one request to a server and reads the whole answer:
// server.send, or a node of a cluster's with an API key.
type soakSender func(method, path, contentType string, body io.Reader) (httpResult, error)

// runExpect posts a run and checks its status and stdout.
func runExpect(body, status, stdout string) func(soakSender) error {
	return func(send soakSender) error {
		r, err := send("POST", "/v1/runs", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		if r.Status != http.StatusOK {
			return fmt.Errorf("status %d: %s", r.Status, clip(r.Body))
		}
		var res struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Stdout string `json:"stdout"`
		}
		if err := json.Unmarshal(r.Body, &res); err != nil || res.Status != status || res.Stdout != stdout || res.ID == "" {
			return fmt.Errorf("answer %s, want status %s and stdout %q", clip(r.Body), status, stdout)
		}
		return nil
	}
}

// soakCases are the soak's kinds of request: runs of every language,
// failing programs, timeouts, bad input, async runs, sessions.
func soakCases() []soakCase {
	return []soakCase{
		{"python", runExpect(`{"language":"python","code":"print(sum(range(10)))"}`, "ok", "45\n")},
		{"python", runExpect(`{"language":"python","code":"print(sum(range(10)))"}`, "ok", "45\n")},
		{"python", runExpect(`{"language":"python","code":"print('x' * 3)"}`, "ok", "xxx\n")},
		{"error", runExpect(`{"language":"python","code":"1/0"}`, "error", "")},
		{"bash", runExpect(`{"language":"bash","code":"echo $((6*7))"}`, "ok", "42\n")},
		{"javascript", runExpect(`{"language":"javascript","code":"console.log([1,2,3].map(x => x * 2).join(','))"}`, "ok", "2,4,6\n")},
		{"timeout", runExpect(`{"language":"python","code":"import time\ntime.sleep(5)","limits":{"wall_time_ms":300}}`, "timeout", "")},
		{"bad input", func(send soakSender) error {
			r, err := send("POST", "/v1/runs", "application/json", strings.NewReader(`{"language":"cobol","code":"x"}`))
			if err != nil {
				return err
			}
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"field":"language"`) {
				return fmt.Errorf("bad input answered %d %s", r.Status, clip(r.Body))
			}
			return nil
		}},
		{"async", func(send soakSender) error {
			r, err := send("POST", "/v1/runs?async=1", "application/json", strings.NewReader(`{"language":"python","code":"print('later')"}`))
			if err != nil {
				return err
			}
			var acc struct{ ID string }
			if r.Status != http.StatusAccepted || json.Unmarshal(r.Body, &acc) != nil || acc.ID == "" {
				return fmt.Errorf("async answered %d %s", r.Status, clip(r.Body))
			}
			var rec struct{ Status, Stdout string }
			if !poll(30*time.Second, func() bool {
				g, err := send("GET", "/v1/runs/"+acc.ID, "", nil)
				return err == nil && json.Unmarshal(g.Body, &rec) == nil && rec.Status != "queued" && rec.Status != "running"
			}) || rec.Status != "ok" || rec.Stdout != "later\n" {
				return fmt.Errorf("async run %s ended %+v", acc.ID, rec)
			}
			return nil
		}},
		{"session", func(send soakSender) error {
			r, err := send("POST", "/v1/sessions", "application/json", strings.NewReader(`{"language":"python"}`))
			if err != nil {
				return err
			}
			var s struct{ ID string }
			if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &s) != nil {
				return fmt.Errorf("create session: %d %s", r.Status, clip(r.Body))
			}
			deleted := false
			defer func() {
				if !deleted {
					_, _ = send("DELETE", "/v1/sessions/"+s.ID, "", nil)
				}
			}()
			for _, c := range []struct{ code, want string }{{"x = 20", ""}, {"x * 2 + 2", "42"}} {
				e, err := send("POST", "/v1/sessions/"+s.ID+"/exec", "application/json", strings.NewReader(fmt.Sprintf(`{"code":%q}`, c.code)))
				if err != nil {
					return err
				}
				var res struct{ Status, Value string }
				if e.Status != http.StatusOK || json.Unmarshal(e.Body, &res) != nil || res.Status != "ok" || res.Value != c.want {
					return fmt.Errorf("cell %q: %d %s", c.code, e.Status, clip(e.Body))
				}
			}
			d, err := send("DELETE", "/v1/sessions/"+s.ID, "", nil)
			deleted = err == nil
			if err != nil || d.Status != http.StatusNoContent {
				return fmt.Errorf("delete session: %v %d %s", err, d.Status, clip(d.Body))
			}
			return nil
		}},
	}
}

// TestSoak: 3 000 mixed requests at concurrency 8 against a real server
// (runs of every language, failing programs, timeouts, bad input, async
// runs, sessions) all get the right answer, with no error of the server,
// and afterwards nothing of them is left: no sandbox process, no cgroup,
// no mount.
func TestSoak(t *testing.T) {
	if !*soak {
		t.Skip("not run: the soak takes minutes and runs only with -soak (scripts/test.sh --soak)")
	}
	testenv.Root(t)
	mountsBefore := mountinfo(t)
	srv := startServer(t, "soak server", filepath.Join(t.TempDir(), "runs.db"))
	runSoak(t, soakCases(), func(int64) soakSender { return srv.send })

	// Nothing of the runs is left once the server is idle.
	pid := srv.PID()
	if !poll(30*time.Second, func() bool { return len(cgroupsOwnedBy(pid)) <= 2*2 }) {
		t.Errorf("cgroups left: %v", cgroupsOwnedBy(pid))
	}
	procs := descendants(pid)
	srv.Stop()
	if left := survivors(procs); len(left) > 0 {
		t.Errorf("processes left after the server stopped: %v", left)
	}
	if left := cgroupsOwnedBy(pid); len(left) > 0 {
		t.Errorf("cgroups left after the server stopped: %v", left)
	}
	for m := range mountinfo(t) {
		if !mountsBefore[m] {
			t.Errorf("mount left: %s", m)
		}
	}
}

// runSoak sends 3 000 requests of cases, in turn, at concurrency 8, the
// i-th through sender(i), and fails t for every wrong answer.
func runSoak(t *testing.T, cases []soakCase, sender func(i int64) soakSender) {
	t.Helper()
	const total, workers = 3000, 8
	var next atomic.Int64
	var mu sync.Mutex
	failures := map[string]int{}
	var firstErrs []string
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				c := cases[i%int64(len(cases))]
				if err := c.do(sender(i)); err != nil {
					mu.Lock()
					failures[c.name]++
					if len(firstErrs) < 10 {
						firstErrs = append(firstErrs, c.name+": "+err.Error())
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d requests at concurrency %d in %v", total, workers, time.Since(start).Round(time.Second))
	if len(failures) > 0 {
		t.Errorf("failures by kind %v; first: %s", failures, strings.Join(firstErrs, "\n"))
	}
}
