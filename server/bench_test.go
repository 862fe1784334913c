package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// BenchmarkAPIOverhead measures what the HTTP service adds to a run:
// `print(1)` through POST /v1/runs (cache bypassed: the run really
// happens, is redacted and recorded in SQLite) against the same request
// to the runtime directly, in the same process, on one zygote slot. The
// paths are timed in separate phases (package benchtest), b.N runs each,
// every phase started once the slot is ready: api (the benchmark's
// loop), direct and bare_http (a bare HTTP handler around the runtime:
// the part of the overhead that is HTTP itself on this machine) back to
// back, each request sent when the previous answer arrived; then bare
// `/usr/bin/python3 -c 'print(1)'`; then api_idle and direct_idle, each
// run after the slot is ready again. Every answer is decoded and must be
// a run that ended ok, exit code 0, stdout "1\n" (not a cache hit); an
// HTTP 200 alone is not enough. It reports each phase's p50 and p99,
// added_ms_p50 (api minus direct, back to back; target ≤ 1 ms),
// bare_http_added_ms_p50, idle_added_ms_p50, and the ratios of the
// medians to bare: api_x_bare, direct_x_bare (back to back) and
// api_idle_x_bare, direct_idle_x_bare.
func BenchmarkAPIOverhead(b *testing.B) {
	testenv.Root(b)
	rt, err := linux.New(linux.Options{Warm: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		b.Fatal(err)
	}
	srv, _ := newServer(b, config{Config: service.Config{Runtime: rt, Store: st, Redactor: red}})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	// The floor any HTTP service has here: a handler that only decodes the
	// request, calls the runtime and encodes the Result.
	bareHTTP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req sandbox.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res, err := rt.Run(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(res)
	}))
	defer bareHTTP.Close()
	req := sandbox.Request{Language: sandbox.Python, Code: "print(1)"}
	body := []byte(`{"language":"python","code":"print(1)"}`)
	// post sends the run to url and decodes the answer into out, which
	// must be or embed a sandbox.Result; it returns the time to the
	// decoded answer.
	post := func(url string, out any, res *sandbox.Result) time.Duration {
		t := time.Now()
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(out)
		resp.Body.Close()
		took := time.Since(t)
		if resp.StatusCode != http.StatusOK || err != nil {
			b.Fatalf("%s: HTTP %d, %v", url, resp.StatusCode, err)
		}
		if err := wantPrint1(*res); err != nil {
			b.Fatalf("%s: %v", url, err)
		}
		return took
	}
	viaAPI := func() time.Duration {
		var out api.RunResponse
		took := post(hs.URL+"/v1/runs?cache=0", &out, &out.Result)
		if out.CacheHit || out.ID == "" {
			b.Fatalf("POST /v1/runs?cache=0: cache hit %v, id %q: want a new run", out.CacheHit, out.ID)
		}
		return took
	}
	viaBareHTTP := func() time.Duration {
		var out sandbox.Result
		return post(bareHTTP.URL, &out, &out)
	}
	direct := func() time.Duration {
		t := time.Now()
		res, err := rt.Run(context.Background(), req)
		took := time.Since(t)
		if err != nil {
			b.Fatalf("direct: %v", err)
		}
		if err := wantPrint1(res); err != nil {
			b.Fatalf("direct: %v", err)
		}
		return took
	}
	for range 3 { // untimed: the page cache, the first forks, the store
		bt.AwaitPools(b, rt)
		viaAPI()
		bt.AwaitPools(b, rt)
		direct()
		bt.AwaitPools(b, rt)
		viaBareHTTP()
	}
	wait := func() { bt.AwaitPools(b, rt) }
	phase := func(run func() time.Duration, before func()) bt.Phase {
		wait()
		return bt.Times(b.N, before, run)
	}
	wait()
	apiB2B := bt.Loop(b, nil, viaAPI)
	directB2B := phase(direct, nil)
	bareHTTPB2B := phase(viaBareHTTP, nil)
	barePython := phase(func() time.Duration { return bt.Print1.Run(b) }, nil)
	apiIdle := phase(viaAPI, wait)
	directIdle := phase(direct, wait)

	barePython.Report(b, "bare_python")
	apiB2B.Report(b, "api")
	directB2B.Report(b, "direct")
	bareHTTPB2B.Report(b, "bare_http")
	apiIdle.Report(b, "api_idle")
	directIdle.Report(b, "direct_idle")
	b.ReportMetric(bt.MS(apiB2B.P50()-directB2B.P50()), "added_ms_p50")
	b.ReportMetric(bt.MS(bareHTTPB2B.P50()-directB2B.P50()), "bare_http_added_ms_p50")
	b.ReportMetric(bt.MS(apiIdle.P50()-directIdle.P50()), "idle_added_ms_p50")
	b.ReportMetric(bt.Ratio(apiB2B, barePython), "api_x_bare")
	b.ReportMetric(bt.Ratio(directB2B, barePython), "direct_x_bare")
	b.ReportMetric(bt.Ratio(apiIdle, barePython), "api_idle_x_bare")
	b.ReportMetric(bt.Ratio(directIdle, barePython), "direct_idle_x_bare")
}

// wantPrint1 says why res is not a print(1) that ran to its end, or nil.
func wantPrint1(res sandbox.Result) error {
	if res.Status != sandbox.StatusOK || res.ExitCode != 0 || string(res.Stdout) != "1\n" {
		return fmt.Errorf("run ended %s (%q), exit code %d, stdout %q: want ok, 0, %q",
			res.Status, res.Reason, res.ExitCode, res.Stdout, "1\n")
	}
	return nil
}
