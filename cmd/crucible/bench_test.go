package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

func TestBenchAPI(t *testing.T) {
	testenv.Root(t)
	f := benchAPIFlags{duration: time.Second, levels: []int{2}, warm: 1, prestart: 1, code: "print(1)", language: "python", wantStdout: &benchDefaultStdout}
	rep, err := benchAPI(context.Background(), &f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Levels) != 1 {
		t.Fatalf("%d levels, want 1", len(rep.Levels))
	}
	lv := rep.Levels[0]
	if rep.BackToBack == nil {
		t.Fatal("no back-to-back phase")
	}
	b2b := rep.BackToBack
	for path, p := range map[string]benchPhase{"api": lv.API, "direct": lv.Direct, "bare": lv.Bare, "b2b api": b2b.API, "b2b bare": b2b.Bare} {
		if p.Requests == 0 || p.OK == 0 {
			t.Errorf("%s: %d requests, %d ok; want some", path, p.Requests, p.OK)
		}
		if p.Errors != 0 {
			t.Errorf("%s: %d errors other than 429: %v", path, p.Errors, p.ErrorSamples)
		}
	}
	if want := b2b.API.LatencyMS.P50 / b2b.Bare.LatencyMS.P50; b2b.BareRatio != want {
		t.Errorf("back to back x_bare %v, want api p50 / bare p50 = %v", b2b.BareRatio, want)
	}
	if want := lv.API.ThroughputRPS / lv.Bare.ThroughputRPS; lv.BareThroughputRatio != want {
		t.Errorf("level x_bare %v, want api / bare throughput = %v", lv.BareThroughputRatio, want)
	}
	if rep.Image != "" || rep.BareRoot != "" {
		t.Errorf("image %q, bare root %q; want the host's for both", rep.Image, rep.BareRoot)
	}
	if lv.ServerLogErrors != 0 || b2b.ServerLogErrors != 0 || !rep.Passed {
		t.Errorf("server logged %d warnings (%v); passed %v", lv.ServerLogErrors, lv.ServerLogSamples, rep.Passed)
	}

	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		BackToBack map[string]json.RawMessage   `json:"back_to_back"`
		Levels     []map[string]json.RawMessage `json:"levels"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Levels) != 1 {
		t.Fatalf("JSON %s: %v", b, err)
	}
	for _, k := range []string{"api", "bare", "x_bare", "server_log_errors"} {
		if _, ok := doc.BackToBack[k]; !ok {
			t.Errorf("JSON back_to_back lacks %q: %s", k, b)
		}
	}
	for _, k := range []string{"concurrency", "api", "direct", "bare", "throughput_ratio", "x_bare", "added_p50_ms", "added_p99_ms", "server_log_errors"} {
		if _, ok := doc.Levels[0][k]; !ok {
			t.Errorf("JSON level lacks %q: %s", k, b)
		}
	}
	var phase map[string]json.RawMessage
	if err := json.Unmarshal(doc.Levels[0]["api"], &phase); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"requests", "ok", "rejected_429", "errors", "error_samples", "throughput_rps", "latency_ms"} {
		if _, ok := phase[k]; !ok {
			t.Errorf("JSON phase lacks %q: %s", k, doc.Levels[0]["api"])
		}
	}
	var lat map[string]float64
	if err := json.Unmarshal(phase["latency_ms"], &lat); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"p50", "p90", "p99", "max"} {
		if lat[k] <= 0 {
			t.Errorf("latency_ms.%s = %v, want > 0", k, lat[k])
		}
	}
}

// TestBenchAPIChecksStdout proves `crucible bench api` counts a run that
// ends ok but prints something other than --want-stdout as an error, on
// both paths, and fails.
func TestBenchAPIChecksStdout(t *testing.T) {
	testenv.Root(t)
	want := "1\n"
	f := benchAPIFlags{duration: 500 * time.Millisecond, levels: []int{1}, warm: 1, code: "print(2)", language: "python", wantStdout: &want}
	rep, err := benchAPI(context.Background(), &f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lv := rep.Levels[0]
	for path, p := range map[string]benchPhase{"api": lv.API, "direct": lv.Direct, "bare": lv.Bare, "b2b api": rep.BackToBack.API, "b2b bare": rep.BackToBack.Bare} {
		if p.OK != 0 || p.Errors == 0 || len(p.ErrorSamples) == 0 || !strings.Contains(p.ErrorSamples[0].Error, `run printed "2\n", want "1\n"`) {
			t.Errorf("%s: %d ok, %d errors %v; want every run an error for its stdout", path, p.OK, p.Errors, p.ErrorSamples)
		}
	}
	if rep.Passed {
		t.Error("the report passed")
	}
}

// TestBenchAPIImage proves `crucible bench api --image` runs the program
// in the image's sandboxes, and bare in the image's own interpreter
// (chrooted into its root filesystem): a program only the data-science
// image can run succeeds on every path.
func TestBenchAPIImage(t *testing.T) {
	testenv.Root(t)
	img := testenv.Image(t, "datascience")
	want := "3\n"
	f := benchAPIFlags{duration: 500 * time.Millisecond, levels: []int{1}, warm: 1, image: "datascience", store: image.DefaultStore,
		code: "import pandas as pd; print(pd.DataFrame({'a': [1, 2]}).a.sum())", language: "python", wantStdout: &want}
	rep, err := benchAPI(context.Background(), &f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Image != "datascience" || rep.BareRoot != img.RootFS {
		t.Errorf("image %q, bare root %q; want datascience, %s", rep.Image, rep.BareRoot, img.RootFS)
	}
	lv := rep.Levels[0]
	for path, p := range map[string]benchPhase{"api": lv.API, "direct": lv.Direct, "bare": lv.Bare, "b2b api": rep.BackToBack.API, "b2b bare": rep.BackToBack.Bare} {
		if p.OK == 0 || p.Errors != 0 {
			t.Errorf("%s: %d ok, %d errors %v; want every run ok", path, p.OK, p.Errors, p.ErrorSamples)
		}
	}
	if !rep.Passed {
		t.Error("the report did not pass")
	}
}
