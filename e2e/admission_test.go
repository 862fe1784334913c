package e2e

import (
	"bufio"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestQueueFull: a real server with one execution slot and one queue place
// answers a burst of runs with at most two accepted and the rest refused
// at once with 429, Retry-After and the JSON error, never an error of
// another kind, and stays healthy afterwards.
func TestQueueFull(t *testing.T) {
	testenv.Root(t)
	srv := startServer(t, "small server", filepath.Join(t.TempDir(), "runs.db"), configFlag(t, `{"max_concurrent": 1, "max_queue": 1}`)...)

	const burst = 8
	results := make([]httpResult, burst)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			body := `{"language":"python","code":"import time; time.sleep(1)"}`
			results[i] = srv.do(t, "POST", "/v1/runs?cache=0", "application/json", strings.NewReader(body))
		})
	}
	wg.Wait()
	counts := map[int]int{}
	for i, r := range results {
		counts[r.Status]++
		switch r.Status {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			checkAPIError(t, "refused run", r, http.StatusTooManyRequests, "too_many_requests", "")
			if r.Header.Get("Retry-After") == "" {
				t.Errorf("run %d: 429 without Retry-After", i)
			}
		default:
			t.Errorf("run %d: status %d, want 200 or 429: %s", i, r.Status, clip(r.Body))
		}
	}
	if counts[http.StatusOK] < 1 || counts[http.StatusOK] > 2 || counts[http.StatusTooManyRequests] < burst-2 {
		t.Errorf("statuses %v: want 1-2 runs accepted (one slot, one queue place) and the rest refused", counts)
	}
	if r := srv.do(t, "GET", "/healthz", "", nil); r.Status != http.StatusOK {
		t.Errorf("healthz after the burst: %d", r.Status)
	}
	if r := srv.do(t, "POST", "/v1/runs", "application/json", strings.NewReader(`{"language":"python","code":"print(1)"}`)); r.Status != http.StatusOK {
		t.Errorf("a run after the burst: %d %s", r.Status, clip(r.Body))
	}
}

// TestStreamRaw: ?stream=1 from a real server is a text/event-stream whose
// first output event arrives while the program still runs, read here as
// any HTTP client would, line by line.
func TestStreamRaw(t *testing.T) {
	testenv.Root(t)
	srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"))
	body := `{"language":"python","code":"import time\nprint('early', flush=True)\ntime.sleep(0.8)\nprint('late')"}`
	resp, err := http.Post(srv.URL+"/v1/runs?stream=1", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	var order []string
	var early, result time.Time
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			order = append(order, name)
			continue
		}
		if strings.HasPrefix(line, "data: ") && order[len(order)-1] == "stdout" && strings.Contains(line, "early") {
			early = time.Now()
		}
		if strings.HasPrefix(line, "data: ") && order[len(order)-1] == "result" {
			result = time.Now()
			if !strings.Contains(line, `"status":"ok"`) {
				t.Errorf("result %s", line)
			}
		}
	}
	if len(order) < 4 || order[0] != "run" || order[len(order)-1] != "result" {
		t.Fatalf("events %v: want run, stdout..., result", order)
	}
	if early.IsZero() || result.Sub(early) < 400*time.Millisecond {
		t.Errorf("the early line came %v before the result: not streamed while the program slept", result.Sub(early))
	}
}
