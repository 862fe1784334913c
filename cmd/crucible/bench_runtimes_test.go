package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestBenchRuntimes runs `crucible bench runtimes` for two rounds on the
// three runtimes, named (so that one this host lacks fails the test), and
// checks every row: the baselines and the rows the runtimes have are
// measured, each run printing 1; the rows a runtime cannot measure yet
// say why; the ratios are the medians'.
func TestBenchRuntimes(t *testing.T) {
	testenv.Root(t)
	testenv.Docker(t)
	testenv.Image(t, "datascience")
	f := benchRuntimesFlags{runtimes: []string{runtimeNative, runtimeDocker, runtimeGVisor}, named: true, image: "datascience", store: image.DefaultStore, runs: 2}
	rep, err := benchRuntimes(context.Background(), &f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rounds != 2 || !rep.Passed {
		t.Errorf("%d rounds, passed %v; want 2, true", rep.Rounds, rep.Passed)
	}
	rows := map[string]runtimesBenchRow{}
	for _, r := range rep.Rows {
		rows[r.Runtime+" "+r.Path] = r
	}
	// Every row of the baselines and of the runtimes' paths that exist.
	mustMeasure := []string{"baseline bare", "baseline docker run", "baseline docker run runsc",
		"native cold", "native pooled", "native pooled API", "native session cell",
		"docker cold", "docker pooled", "docker pooled API", "gvisor cold", "gvisor pooled", "gvisor pooled API"}
	if len(rows) != 15 {
		t.Errorf("%d rows, want 15: 3 baselines, 3 runtimes × cold, pooled, pooled API, session cell", len(rows))
	}
	for _, k := range mustMeasure {
		if r := rows[k]; r.State != rowMeasured {
			t.Errorf("%s: %s (%s), want measured", k, r.State, r.Reason)
		}
	}
	bare, dockerRun, runsc := rows["baseline bare"].LatencyMS.P50, rows["baseline docker run"].LatencyMS.P50, rows["baseline docker run runsc"].LatencyMS.P50
	for k, r := range rows {
		switch r.State {
		case rowMeasured:
			if r.Runs != 2 || r.Errors != 0 || r.LatencyMS.P50 <= 0 || r.LatencyMS.P90 < r.LatencyMS.P50 {
				t.Errorf("%s: %d runs, %d errors %v, p50 %v, p90 %v; want 2 runs printing 1", k, r.Runs, r.Errors, r.ErrorSamples, r.LatencyMS.P50, r.LatencyMS.P90)
			}
			if r.XBare != r.LatencyMS.P50/bare || r.XDockerRun != r.LatencyMS.P50/dockerRun || r.XDockerRunRunsc != r.LatencyMS.P50/runsc {
				t.Errorf("%s: ratios %v %v %v, want its p50 over bare's, docker run's and docker run runsc's", k, r.XBare, r.XDockerRun, r.XDockerRunRunsc)
			}
		case rowNotMeasured:
			if r.Path != pathSession || r.Runtime == runtimeNative || r.Reason == "" {
				t.Errorf("%s: not measured (%q); only a docker or gvisor session row may be, with a reason", k, r.Reason)
			}
		default:
			t.Errorf("%s: %s: %s", k, r.State, r.Reason)
		}
	}
	for _, rt := range []string{runtimeNative, runtimeDocker, runtimeGVisor} {
		if d := rows[rt+" pooled API"].Detail; !strings.HasPrefix(d, rows[rt+" pooled"].Detail+", through the API: POST /v1/runs?cache=0") {
			t.Errorf("%s pooled API: detail %q, want the pooled row's runtime through the API", rt, d)
		}
	}
	// The targets are the API rows'.
	lines := targetLines(rep.Rows)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "docker pooled API / docker run: ") || !strings.HasPrefix(lines[1], "gvisor pooled API / docker run runsc: ") {
		t.Errorf("target lines %q, want docker pooled API's and gvisor pooled API's", lines)
	}
	if d := rows["baseline docker run runsc"].Detail; !strings.Contains(d, " run --rm "+dockerRunProfile+" --runtime runsc crucible/datascience:") {
		t.Errorf("docker run runsc's command %q, want the production profile under runsc", d)
	}

	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Rows) == 0 {
		t.Fatalf("JSON %s: %v", b, err)
	}
	for _, k := range []string{"runtime", "path", "detail", "state", "runs", "errors", "error_samples", "latency_ms", "x_docker_run", "x_docker_run_runsc", "x_bare"} {
		if _, ok := doc.Rows[0][k]; !ok {
			t.Errorf("JSON row lacks %q: %s", k, b)
		}
	}
}

// TestBenchRuntimesMissingDocker proves a runtime the host lacks is
// reported, its rows not measured and the others measured, unless
// --runtime named it: then the command fails. The Docker daemon is made
// missing by pointing the client at a socket nothing listens on.
func TestBenchRuntimesMissingDocker(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no.sock")
	f := benchRuntimesFlags{runtimes: []string{runtimeNative, runtimeDocker}, image: "datascience", store: image.DefaultStore, runs: 1}
	rep, err := benchRuntimes(context.Background(), &f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		wantMeasured := r.Runtime == runtimeNative || r.Path == pathBare
		switch {
		case wantMeasured && (r.State != rowMeasured || r.Runs != 1 || r.Errors != 0):
			t.Errorf("%s %s: %s, %d runs, %d errors; want measured once", r.Runtime, r.Path, r.State, r.Runs, r.Errors)
		case !wantMeasured && (r.State != rowUnavailable || !strings.Contains(r.Reason, "no Docker daemon answers")):
			t.Errorf("%s %s: %s (%s); want unavailable: no Docker daemon", r.Runtime, r.Path, r.State, r.Reason)
		}
	}
	if !rep.Passed {
		t.Error("the report did not pass")
	}

	f.named = true
	rep, err = benchRuntimes(context.Background(), &f, io.Discard)
	var ec exitCodeError
	if rep != nil || !errors.As(err, &ec) || ec != exitUsage {
		t.Errorf("with --runtime docker named: report %v, error %v; want exit code %d", rep != nil, err, exitUsage)
	}
}
