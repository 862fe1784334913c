package service_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	benchtest "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
	"github.com/crucible-sandbox/crucible/swe"
)

// BenchmarkSWEServiceOverhead measures what the service adds to a swe
// run's steps: the same scripted run (benchSteps bash commands, echo step N, then a
// submit of no change; the model a local server speaking the OpenAI
// wire format, as no model can run here) on the same data-science
// runtime, through the service (admission, the run's sessions recorded
// in the store and linked to it, redaction, the code policy's gate, the
// events, the run written through to the store) and through swe.Run on
// the bare runtime. Phases of b.N each: the service's runs (the
// benchmark's loop), then the bare ones; it reports their medians and
// the service's overhead per step, (service - bare) / benchSteps, in
// milliseconds.
func BenchmarkSWEServiceOverhead(b *testing.B) {
	const benchSteps = 30
	calls := make([]llmtest.Call, 0, benchSteps+1)
	for i := range benchSteps { // different commands: the same one again is a loop
		calls = append(calls, llmtest.Call{Name: "bash", Args: map[string]string{"command": fmt.Sprintf("echo step %d", i)}})
	}
	calls = append(calls, llmtest.Call{Name: "submit", Args: map[string]string{}})
	repo := tarGz(b, bugRepo)
	rt := dataScienceRuntime(b)
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	// One model for every run: llmtest.Calls reads the turn from each
	// request's conversation.
	svc := sweServiceOn(b, rt, st, sweModel(b, calls...), nil)
	through := func() time.Duration {
		start := time.Now()
		run, err := svc.StartAgentRun(context.Background(), "acme", sweRequest(repo, false), nil)
		if err != nil {
			b.Fatal(err)
		}
		end := waitEnd(b, svc, run.ID)
		if end.Status != api.AgentRunStatus(swe.StatusNoChange) {
			b.Fatalf("through the service: %s (%s)", end.Status, end.Reason)
		}
		return time.Since(start)
	}
	bare := func() time.Duration {
		start := time.Now()
		res, err := swe.Run(context.Background(), swe.Config{Model: sweModel(b, calls...), Sandbox: rt}, swe.Task{Repo: swe.Repo{Archive: repo}, Prompt: "fix it"})
		if err != nil || res.Status != swe.StatusNoChange {
			b.Fatalf("bare: %+v %v", res, err)
		}
		return time.Since(start)
	}
	served := benchtest.Loop(b, nil, through)
	base := benchtest.Times(len(served), nil, bare)
	benchtest.Compare(b, served, "service", base, "bare", "ratio")
	b.ReportMetric(benchtest.MS(served.P50()-base.P50())/benchSteps, "overhead_ms/step")
}

// waitEnd waits for the end of tenant acme's agent run id and returns it.
func waitEnd(tb testing.TB, svc *service.Service, id string) *api.AgentRun {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	events, err := svc.AgentRunEvents(ctx, "acme", id, 0)
	if err != nil {
		tb.Fatal(err)
	}
	for e := range events {
		if e.Kind == service.EventResult {
			return e.Agent.Run
		}
	}
	tb.Fatalf("agent run %s: no result", id)
	return nil
}
