package e2bapi_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
)

// TestSDKLatency measures, with a warm session pool (two sessions of the
// datascience image kept started), what the SDK's create + runCode +
// kill costs end to end (latency.mjs), and a runCode round trip on a
// live sandbox against a session cell of the service called directly.
// It checks only that they were measured and ran (the figures depend on
// the machine's load); it logs the medians.
func TestSDKLatency(t *testing.T) {
	_, host, digest := runtimes(t)
	img := testenv.Image(t, "datascience")
	warm, err := linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: digest, WarmSessions: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = warm.Close() })
	ts := newTestServer(t, func(c *service.Config) {
		c.Runtime = warm
		c.Images = []service.Image{{Name: "host", Runtime: host}}
	})
	// A session cell through the service, the baseline of runCode.
	ctx := context.Background()
	ss, err := ts.svc.OpenSession(ctx, "acme", sandbox.SessionRequest{}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cell []float64
	for i := 0; i < 31; i++ {
		start := time.Now()
		if _, err := ss.ExecRecorded(ctx, sandbox.Cell{Code: "1"}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			cell = append(cell, float64(time.Since(start).Microseconds())/1000)
		}
	}
	_ = ss.Close()
	var got struct{ CreateRunKillMs, RunCodeMs []float64 }
	runSDK(t, ts, "latency.mjs", ts.newKey("acme"), &got)
	if len(got.CreateRunKillMs) != 5 || len(got.RunCodeMs) != 30 {
		t.Fatalf("latency.mjs measured %+v", got)
	}
	t.Logf("create+runCode('print(1)')+kill through the SDK, warm pool: median %.1f ms (min %.1f); runCode('1') on a live sandbox: median %.2f ms; a session cell through the service: median %.2f ms",
		median(got.CreateRunKillMs), slices.Min(got.CreateRunKillMs), median(got.RunCodeMs), median(cell))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
