package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/store"
)

func TestHealthz(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.do("GET", "/healthz", nil)
	var body map[string]string
	r.json(t, &body)
	if r.status != http.StatusOK || body["status"] != "ok" {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
}

func TestRunOKAndError(t *testing.T) {
	ts := newTestServer(t, nil)
	ok := ts.run("/v1/runs", python(`print("hello")`))
	if ok.Status != sandbox.StatusOK || string(ok.Stdout) != "hello\n" || ok.ExitCode != 0 || ok.CacheHit {
		t.Fatalf("ok run: %+v", ok)
	}
	rec := ts.record(ok.ID)
	if rec.Status != sandbox.StatusOK || string(rec.Stdout) != "hello\n" || rec.Tenant != "default" ||
		rec.StartedAt == nil || rec.FinishedAt == nil || rec.Code != `print("hello")` {
		t.Fatalf("ok record: %+v", rec)
	}

	bad := ts.run("/v1/runs", python("import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)"))
	if bad.Status != sandbox.StatusError || bad.ExitCode != 3 || string(bad.Stderr) != "oops\n" {
		t.Fatalf("error run: %+v", bad)
	}
	if rec := ts.record(bad.ID); rec.Status != sandbox.StatusError || rec.ExitCode != 3 {
		t.Fatalf("error record: %+v", rec)
	}
}

func TestRunInvalid(t *testing.T) {
	ts := newTestServer(t, func(c *config) { c.MaxBodyBytes = 4096 })
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"unknown language", map[string]any{"language": "cobol", "code": "x"}, "language"},
		{"negative limit", map[string]any{"language": "python", "code": "1", "limits": map[string]any{"wall_time_ms": -1}}, "limits.wall_time_ms"},
		{"bad file name", map[string]any{"language": "python", "code": "1", "files": []any{map[string]any{"name": "../x", "content": ""}}}, "files[0].name"},
		{"wrong type", map[string]any{"language": "python", "code": 7}, "code"},
		{"unknown field", map[string]any{"language": "python", "code": "1", "timeout": 5}, "timeout"},
		{"field of another case", []byte(`{"Language":"python","code":"1"}`), "Language"},
		{"unknown nested field", map[string]any{"language": "python", "limits": map[string]any{"memory": 1}}, "limits.memory"},
		{"duplicate key", []byte(`{"language":"python","code":"print(1)","code":"print(2)"}`), "code"},
		{"duplicate env key", []byte(`{"language":"python","env":{"A":"1","A":"2"}}`), "env.A"},
		{"invalid UTF-8 in code", []byte("{\"language\":\"python\",\"code\":\"print('\xff')\"}"), "code"},
		{"invalid UTF-8 in a file", []byte("{\"language\":\"python\",\"files\":[{\"name\":\"a\",\"content\":\"\xfe\"}]}"), "files[0].content"},
		{"bad base64", []byte(`{"language":"python","stdin":{"base64":"!!"}}`), "stdin"},
		{"NUL in code", []byte(`{"language":"python","code":"a\u0000b"}`), "code"},
		{"not JSON", []byte("{"), "body"},
		{"trailing data", []byte(`{"language":"python","code":"1"} {}`), "body"},
		{"empty", []byte{}, "body"},
		{"memory above the host", map[string]any{"language": "python", "limits": map[string]any{"memory_bytes": 64 << 30}}, "limits.memory_bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := ts.do("POST", "/v1/runs", c.body).wantError(t, http.StatusBadRequest, "invalid_request")
			if e.Error.Field != c.field {
				t.Errorf("field %q, want %q (%+v)", e.Error.Field, c.field, e.Error)
			}
			if e.Error.Rule == "" {
				t.Errorf("no rule: %+v", e.Error)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		e := ts.do("POST", "/v1/runs", python(strings.Repeat("#", 5000))).wantError(t, http.StatusRequestEntityTooLarge, "payload_too_large")
		if e.Error.Field != "body" || e.Error.Rule == "" {
			t.Errorf("413 names %q, %q; want body and a rule", e.Error.Field, e.Error.Rule)
		}
	})
	t.Run("bad query", func(t *testing.T) {
		e := ts.do("POST", "/v1/runs?async=maybe", python("1")).wantError(t, http.StatusBadRequest, "invalid_request")
		if e.Error.Field != "async" {
			t.Errorf("field %q, want async", e.Error.Field)
		}
	})
	// Nothing invalid was recorded.
	runs, _, err := ts.store.List(context.Background(), "default", store.Filter{})
	if err != nil || len(runs) != 0 {
		t.Fatalf("store holds %d runs (%v), want none", len(runs), err)
	}
}

func TestCache(t *testing.T) {
	ts := newTestServer(t, nil)
	code := python("import random\nprint(random.random())")
	// Without ?cache=1 a program means what it says: new numbers each time.
	if a, b := ts.run("/v1/runs", code), ts.run("/v1/runs", code); a.CacheHit || b.CacheHit || string(a.Stdout) == string(b.Stdout) {
		t.Fatalf("uncached runs answered %q (hit %v) and %q (hit %v)", a.Stdout, a.CacheHit, b.Stdout, b.CacheHit)
	}
	first := ts.run("/v1/runs?cache=1", code)
	second := ts.run("/v1/runs?cache=1", code)
	if first.CacheHit || !second.CacheHit {
		t.Fatalf("cache_hit: first %v, second %v; want false, true", first.CacheHit, second.CacheHit)
	}
	if string(second.Stdout) != string(first.Stdout) || second.Status != sandbox.StatusOK || second.ID == first.ID {
		t.Fatalf("cached answer %+v of %+v", second, first)
	}
	if rec := ts.record(second.ID); !rec.CacheHit || string(rec.Stdout) != string(first.Stdout) {
		t.Fatalf("cache-hit record: %+v", rec)
	}
	fresh := ts.run("/v1/runs?cache=0", code)
	if fresh.CacheHit || string(fresh.Stdout) == string(first.Stdout) {
		t.Fatalf("cache=0 served %+v; want a fresh run", fresh)
	}
	// A failure the code determines is cached too; a limit is not.
	slow := map[string]any{"language": "python", "code": "import time\ntime.sleep(5)", "limits": map[string]any{"wall_time_ms": 200}}
	if r := ts.run("/v1/runs?cache=1", slow); r.Status != sandbox.StatusTimeout {
		t.Fatalf("slow run: %+v", r)
	}
	if r := ts.run("/v1/runs?cache=1", slow); r.CacheHit {
		t.Fatalf("a timeout was served from the cache: %+v", r)
	}
	metrics := string(ts.do("GET", "/metrics", nil).body)
	for _, want := range []string{"cache_hits_total 1", "cache_misses_total 3"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// waitTerminal polls a run until it leaves the queued and running states.
func (ts *testServer) waitTerminal(id string) api.Run {
	ts.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		rec := ts.record(id)
		if rec.Status != api.StatusQueued && rec.Status != api.StatusRunning {
			return rec
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("run %s did not end", id)
	return api.Run{}
}

func TestAsync(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.do("POST", "/v1/runs?async=1", python("import time\ntime.sleep(0.3)\nprint('later')"))
	var accepted struct{ ID, Status string }
	r.json(t, &accepted)
	if r.status != http.StatusAccepted || accepted.ID == "" || accepted.Status != "queued" {
		t.Fatalf("async: %d %s", r.status, r.body)
	}
	if loc := r.header.Get("Location"); loc != "/v1/runs/"+accepted.ID {
		t.Errorf("Location %q", loc)
	}
	rec := ts.waitTerminal(accepted.ID)
	if rec.Status != sandbox.StatusOK || string(rec.Stdout) != "later\n" {
		t.Fatalf("async record: %+v", rec)
	}
}

func TestListRuns(t *testing.T) {
	ts := newTestServer(t, nil)
	before := time.Now().Add(-time.Second)
	ids := map[string]bool{}
	for _, req := range []map[string]any{
		python("print(1)"),
		python("print(2)"),
		{"language": "bash", "code": "exit 4"},
	} {
		ids[ts.run("/v1/runs", req).ID] = true
	}
	list := func(query string) ([]api.Run, string) {
		t.Helper()
		r := ts.do("GET", "/v1/runs?"+query, nil)
		var page struct {
			Runs []api.Run `json:"runs"`
			Next string    `json:"next"`
		}
		r.json(t, &page)
		if r.status != http.StatusOK || page.Runs == nil {
			t.Fatalf("list %s: %d %s", query, r.status, r.body)
		}
		return page.Runs, page.Next
	}
	if runs, _ := list("language=bash"); len(runs) != 1 || runs[0].Status != sandbox.StatusError {
		t.Fatalf("language=bash: %+v", runs)
	}
	if runs, _ := list("status=ok&language=python"); len(runs) != 2 {
		t.Fatalf("status=ok: %d runs", len(runs))
	}
	if runs, _ := list("since=" + url.QueryEscape(before.Format(time.RFC3339))); len(runs) != 3 {
		t.Fatalf("since before: %d runs", len(runs))
	}
	if runs, _ := list("since=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))); len(runs) != 0 {
		t.Fatalf("since later: %d runs", len(runs))
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("too many pages")
		}
		runs, next := list("limit=1&cursor=" + url.QueryEscape(cursor))
		for _, r := range runs {
			seen[r.ID] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if fmt.Sprint(seen) != fmt.Sprint(ids) {
		t.Fatalf("paging saw %v, want %v", seen, ids)
	}
	for _, c := range []struct{ query, field string }{
		{"status=nope", "status"},
		{"language=cobol", "language"},
		{"since=yesterday", "since"},
		{"limit=0", "limit"},
		{"limit=x", "limit"},
		{"cursor=garbage", "cursor"},
	} {
		e := ts.do("GET", "/v1/runs?"+c.query, nil).wantError(t, http.StatusBadRequest, "invalid_request")
		if e.Error.Field != c.field || !strings.Contains(e.Error.Message, c.field) {
			t.Errorf("%s: %+v, want field %s named", c.query, e.Error, c.field)
		}
	}
}

func TestNotFound(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.do("GET", "/v1/runs/run_nope", nil).wantError(t, http.StatusNotFound, "not_found")
	ts.do("GET", "/v1/nothing", nil).wantError(t, http.StatusNotFound, "not_found")
	ts.do("POST", "/v1/sessions/ses_nope/exec", map[string]any{"code": "1"}).wantError(t, http.StatusNotFound, "not_found")
	ts.do("GET", "/v1/sessions/ses_nope/files", nil).wantError(t, http.StatusNotFound, "not_found")
	ts.do("DELETE", "/v1/sessions/ses_nope", nil).wantError(t, http.StatusNotFound, "not_found")
	r := ts.do("DELETE", "/v1/runs", nil)
	r.wantError(t, http.StatusMethodNotAllowed, "method_not_allowed")
	if r.header.Get("Allow") == "" {
		t.Error("405 without Allow")
	}
}

func TestRedaction(t *testing.T) {
	ts := newTestServer(t, nil)
	rr := ts.run("/v1/runs", python(`print("key: AKIAIOSFODNN7EXAMPLE")`))
	if !strings.Contains(string(rr.Stdout), "[REDACTED") || strings.Contains(string(rr.Stdout), "AKIAIOSFODNN7EXAMPLE") {
		t.Fatalf("stdout not redacted: %q", rr.Stdout)
	}
	rec := ts.record(rr.ID)
	if rec.Redactions < 1 || strings.Contains(string(rec.Stdout), "AKIAIOSFODNN7EXAMPLE") {
		t.Fatalf("record: redactions %d, stdout %q", rec.Redactions, rec.Stdout)
	}
}

func TestSessions(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.do("POST", "/v1/sessions", map[string]any{"language": "bash"}).wantError(t, http.StatusBadRequest, "invalid_request")

	r := ts.do("POST", "/v1/sessions", map[string]any{"language": "python"})
	var created struct{ ID string }
	r.json(t, &created)
	if r.status != http.StatusCreated || created.ID == "" {
		t.Fatalf("create session: %d %s", r.status, r.body)
	}
	base := "/v1/sessions/" + created.ID
	exec := func(code string) sandbox.Result {
		t.Helper()
		r := ts.do("POST", base+"/exec", map[string]any{"code": code})
		var res sandbox.Result
		r.json(t, &res)
		if r.status != http.StatusOK {
			t.Fatalf("exec %q: %d %s", code, r.status, r.body)
		}
		return res
	}
	exec("x = 41")
	if res := exec("x + 1"); res.Value != "42" {
		t.Fatalf("session lost its state: %+v", res)
	}
	if res := exec(`print("AKIAIOSFODNN7EXAMPLE")`); !strings.Contains(string(res.Stdout), "[REDACTED") {
		t.Fatalf("cell output not redacted: %q", res.Stdout)
	}
	ts.do("POST", base+"/exec", map[string]any{"code": "1", "timeout_ms": -1}).wantError(t, http.StatusBadRequest, "invalid_request")

	if r := ts.do("PUT", base+"/files/data/in.txt", []byte("hello")); r.status != http.StatusNoContent {
		t.Fatalf("PUT file: %d %s", r.status, r.body)
	}
	r = ts.do("GET", base+"/files/data/in.txt", nil)
	if r.status != http.StatusOK || string(r.body) != "hello" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET file: %d %q %q", r.status, r.header.Get("Content-Type"), r.body)
	}
	if res := exec("open('data/in.txt').read().upper()"); res.Value != "'HELLO'" {
		t.Fatalf("cell did not see the file: %+v", res)
	}
	r = ts.do("GET", base+"/files", nil)
	var list struct{ Files []sandbox.FileInfo }
	r.json(t, &list)
	found := false
	for _, f := range list.Files {
		found = found || (f.Name == "data/in.txt" && f.Size == 5)
	}
	if r.status != http.StatusOK || !found {
		t.Fatalf("file list: %d %s", r.status, r.body)
	}
	ts.do("GET", base+"/files/missing.txt", nil).wantError(t, http.StatusNotFound, "not_found")
	ts.do("GET", base+"/files/data", nil).wantError(t, http.StatusBadRequest, "invalid_request")

	if !strings.Contains(string(ts.do("GET", "/metrics", nil).body), "active_sessions 1") {
		t.Error("/metrics does not count the open session")
	}
	if r := ts.do("DELETE", base, nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	ts.do("POST", base+"/exec", map[string]any{"code": "x"}).wantError(t, http.StatusGone, "session_closed")
	ts.do("GET", base+"/files/data/in.txt", nil).wantError(t, http.StatusGone, "session_closed")
	ts.do("DELETE", base, nil).wantError(t, http.StatusGone, "session_closed")
	if !strings.Contains(string(ts.do("GET", "/metrics", nil).body), "active_sessions 0") {
		t.Error("/metrics still counts the closed session")
	}
}

func TestQueueFull(t *testing.T) {
	ts := newTestServer(t, func(c *config) { c.MaxConcurrent, c.MaxQueue = 1, 1 })
	const n = 6
	results := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = ts.do("POST", "/v1/runs?cache=0", python("import time\ntime.sleep(1)"))
		}()
	}
	wg.Wait()
	counts := map[int]int{}
	for _, r := range results {
		counts[r.status]++
		switch r.status {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			r.wantError(t, http.StatusTooManyRequests, "too_many_requests")
			if r.header.Get("Retry-After") != "1" {
				t.Errorf("429 with Retry-After %q", r.header.Get("Retry-After"))
			}
		default:
			t.Errorf("status %d: %s", r.status, r.body)
		}
	}
	if counts[http.StatusOK] < 1 || counts[http.StatusTooManyRequests] < 1 || counts[http.StatusOK] > 2 {
		t.Fatalf("statuses %v: want 1-2 runs and the rest refused", counts)
	}
	metrics := string(ts.do("GET", "/metrics", nil).body)
	for _, want := range []string{`crucible_runs_total{language="python",status="ok"}`, "crucible_queue_depth 0", "crucible_run_duration_seconds_count"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestShutdown(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.do("POST", "/v1/runs?async=1&cache=0", python("import time\ntime.sleep(0.5)\nprint('done')"))
	var accepted struct{ ID string }
	r.json(t, &accepted)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.svc.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// Shutdown returned after the run ended, and recorded it.
	if rec := ts.record(accepted.ID); rec.Status != sandbox.StatusOK || string(rec.Stdout) != "done\n" {
		t.Fatalf("record after Shutdown: %+v", rec)
	}
	e := ts.do("POST", "/v1/runs?cache=0", python("1"))
	e.wantError(t, http.StatusServiceUnavailable, "unavailable")
}

func TestShutdownKillsAtDeadline(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.do("POST", "/v1/runs?async=1&cache=0", map[string]any{"language": "python", "code": "import time\ntime.sleep(20)", "limits": map[string]any{"wall_time_ms": 30000}})
	var accepted struct{ ID string }
	r.json(t, &accepted)
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := ts.svc.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want the deadline", err)
	}
	if rec := ts.waitTerminal(accepted.ID); rec.Status != sandbox.StatusKilled {
		t.Fatalf("record after a killing Shutdown: %+v", rec)
	}
}

func TestSessionExpired(t *testing.T) {
	nativeRuntime(t) // skips unless root
	rt, err := linux.New(linux.Options{SessionIdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ts := newTestServer(t, func(c *config) { c.Runtime = rt })
	r := ts.do("POST", "/v1/sessions", map[string]any{"language": "python"})
	var created struct{ ID string }
	r.json(t, &created)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, open := rt.Session(created.ID); !open {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle session was not closed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The runtime closed it on its own: still 410, not 404.
	ts.do("POST", "/v1/sessions/"+created.ID+"/exec", map[string]any{"code": "1"}).wantError(t, http.StatusGone, "session_closed")
}
