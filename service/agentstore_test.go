package service_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// storedService returns an agent service on st, the store a test shares
// between the services it starts, as a restarted server does; it is
// shut down when the test ends.
func storedService(t *testing.T, st store.Store, model llm.Provider) *service.Service {
	t.Helper()
	return storedServiceOn(t, st, printRuntime{}, model)
}

// storedServiceOn is storedService on runtime rt.
func storedServiceOn(t *testing.T, st store.Store, rt service.Runtime, model llm.Provider) *service.Service {
	t.Helper()
	rc := policy.DefaultRedactConfig()
	rc.Secrets = []string{secret}
	red, err := policy.NewRedactor(rc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := service.Config{Runtime: rt, Store: st, Redactor: red, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Agents.Model = model
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Shutdown(context.Background()) })
	return svc
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "crucible.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// replayed returns the events of tenant's agent run id after after, as
// JSON, the way a stream shows them.
func replayed(t *testing.T, svc *service.Service, tenant, id string, after int64) []string {
	t.Helper()
	events, err := svc.AgentRunEvents(context.Background(), tenant, id, after)
	if err != nil {
		t.Fatalf("AgentRunEvents(%s, after %d): %v", id, after, err)
	}
	var out []string
	if events == nil {
		return nil
	}
	for e := range events {
		var v any = e.Output
		if e.Agent != nil {
			v = e.Agent.Data()
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(e.Kind)+" "+string(b)+" id "+strconv.FormatInt(e.ID, 10))
	}
	return out
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAgentRunRetention: ended runs are held in memory up to
// AgentConfig.Retain, then read from the store: the older run reads as
// it did, trace and all, its stream replays with the same events and
// IDs, and the list pages both, newest first.
func TestAgentRunRetention(t *testing.T) {
	svc := agentService(t, scriptedModel(t, "2", "print(1+1)"), func(c *service.Config) { c.Agents.Retain = 1 })
	ctx := context.Background()
	run, err := svc.StartAgentRun(ctx, "acme", api.AgentRunRequest{Task: "add " + secret, TextMode: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	follow(t, svc, "acme", run.ID, nil)
	held, err := svc.AgentRun("acme", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	heldEvents := replayed(t, svc, "acme", run.ID, 0)
	newer, err := svc.StartAgentRun(ctx, "acme", api.AgentRunRequest{Task: "add", TextMode: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	follow(t, svc, "acme", newer.ID, nil)

	stored, err := svc.AgentRun("acme", run.ID)
	if err != nil {
		t.Fatalf("the older run, beyond the retention: %v, want it from the store", err)
	}
	if a, b := asJSON(t, stored), asJSON(t, held); a != b {
		t.Errorf("from the store the run is\n%s\nheld it was\n%s", a, b)
	}
	if strings.Contains(string(stored.Trace), secret) || strings.Contains(stored.Task, secret) {
		t.Errorf("the stored run holds the secret: %+v", stored)
	}
	if got := replayed(t, svc, "acme", run.ID, 0); !reflect.DeepEqual(got, heldEvents) {
		t.Errorf("replayed from the store:\n%s\nheld:\n%s", strings.Join(got, "\n"), strings.Join(heldEvents, "\n"))
	}
	for i := range heldEvents { // resumed after each event's ID: the rest
		after, err := strconv.ParseInt(heldEvents[i][strings.LastIndex(heldEvents[i], " ")+1:], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		got := replayed(t, svc, "acme", run.ID, after)
		if want := heldEvents[i+1:]; !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("after %d: %q, want %q", after, got, want)
		}
	}
	if _, err := svc.AgentRun("other", run.ID); kindOf(err) != service.KindNotFound {
		t.Errorf("another tenant's stored run: %v, want KindNotFound", err)
	}
	if _, err := svc.AgentRunEvents(ctx, "other", run.ID, 0); kindOf(err) != service.KindNotFound {
		t.Errorf("another tenant's stored events: %v, want KindNotFound", err)
	}
	if _, err := svc.DecideApproval("acme", run.ID, "apr_0000000000000000", true, ""); kindOf(err) != service.KindNotFound {
		t.Errorf("an approval the stored run never asked for: %v, want KindNotFound", err)
	}
	if got, err := svc.CancelAgentRun(ctx, "acme", run.ID); err != nil || got.Status != "answered" {
		t.Errorf("cancelling the stored run: %+v, %v; want it as it ended", got, err)
	}

	var ids []string
	page := service.AgentRunPage{Limit: 1}
	for range 3 {
		list, next, err := svc.AgentRuns(ctx, "acme", page)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list {
			ids = append(ids, r.ID)
		}
		if page.Cursor = next; next == "" {
			break
		}
	}
	if want := []string{newer.ID, run.ID}; !reflect.DeepEqual(ids, want) {
		t.Errorf("listed %v, want %v", ids, want)
	}
	if _, _, err := svc.AgentRuns(ctx, "acme", service.AgentRunPage{Cursor: "nope"}); !isInput(err, "cursor") {
		t.Errorf("a bad cursor: %v, want an input error naming cursor", err)
	}
}

// TestAgentRunInterruptedByRestart: a run waiting for an approval when
// its service goes away (no shutdown: a crash) reads, on the next
// service on the same store, as interrupted, saying which approval it
// waited for; its events are kept, ending with a result that says why;
// a decision on its approval is refused as a conflict.
func TestAgentRunInterruptedByRestart(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	crashed := storedService(t, st, scriptedModel(t, "2", "print(1+1)"))
	run, err := crashed.StartAgentRun(ctx, "acme", api.AgentRunRequest{Task: "add", TextMode: true, Approve: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var approval *api.AgentApproval
	follow(t, crashed, "acme", run.ID, func(e service.Event) bool {
		if e.Kind == service.EventApproval {
			approval = e.Agent.Approval
		}
		return approval == nil
	})
	if approval == nil {
		t.Fatal("no approval event")
	}

	svc := storedService(t, st, scriptedModel(t, "2", "print(1+1)"))
	got, err := svc.AgentRun("acme", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != api.AgentInterrupted || !strings.Contains(got.Reason, approval.ID) || got.FinishedAt == nil || got.PendingApproval != nil {
		t.Errorf("after the restart the run is %+v, want interrupted, its reason naming %s", got, approval.ID)
	}
	_, err = svc.DecideApproval("acme", run.ID, approval.ID, true, "")
	if kindOf(err) != service.KindConflict || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("approving after the restart: %v, want KindConflict saying the run was interrupted", err)
	}
	events := replayed(t, svc, "acme", run.ID, 0)
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e[:strings.Index(e, " ")])
	}
	if len(kinds) < 3 || kinds[0] != "agent_run" || !strings.Contains(strings.Join(kinds, " "), "approval") || kinds[len(kinds)-1] != "result" ||
		!strings.Contains(events[len(events)-1], `"status":"interrupted"`) {
		t.Errorf("events after the restart:\n%s\nwant agent_run ... approval ... result (interrupted)", strings.Join(events, "\n"))
	}
	if list, _, err := svc.AgentRuns(ctx, "acme", service.AgentRunPage{}); err != nil || len(list) != 1 || list[0].Status != api.AgentInterrupted {
		t.Errorf("listed after the restart: %+v, %v", list, err)
	}
	// A third start changes nothing: the run ended.
	again := storedService(t, st, scriptedModel(t, "2", "print(1+1)"))
	if got2, err := again.AgentRun("acme", run.ID); err != nil || asJSON(t, got2) != asJSON(t, got) {
		t.Errorf("after another restart: %s, %v; want %s", asJSON(t, got2), err, asJSON(t, got))
	}
	if events2 := replayed(t, again, "acme", run.ID, 0); !reflect.DeepEqual(events2, events) {
		t.Errorf("events after another restart:\n%s\nwant\n%s", strings.Join(events2, "\n"), strings.Join(events, "\n"))
	}
}

// TestQuestionStored: the agent run that answers an analysis's question
// is written through to the store as any agent run is, with the output
// its replay keeps: after a restart (a new service on the same store) it
// reads as it ended, and its stream replays as it did, output and answer
// included, with the same IDs.
func TestQuestionStored(t *testing.T) {
	rt := dataScienceRuntime(t)
	st := openStore(t)
	ctx := context.Background()
	svc := storedServiceOn(t, st, rt, scriptedModel(t, "the mean charge is 200", "print('mean', df['charges'].mean(), '"+secret+"')"))
	a, err := svc.CreateAnalysis(ctx, "acme", service.AnalysisSpec{Datasets: []analyst.Dataset{{Name: "insurance.csv", Content: []byte("charges\n100\n300\n")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := svc.AskAnalysis(ctx, "acme", a.ID, api.QuestionRequest{Question: "What is the mean charge?", TextMode: true})
	if err != nil {
		t.Fatal(err)
	}
	followQuestion(t, svc, "acme", a.ID, 1, nil)
	held, err := svc.AgentRun("acme", q.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	heldEvents := replayed(t, svc, "acme", q.Run.ID, 0)
	joined := strings.Join(heldEvents, "\n")
	if !strings.Contains(joined, "stdout \"mean 200.0 [REDACTED") || !strings.Contains(joined, "\nanswer ") {
		t.Fatalf("the question's replay lacks its output or its answer:\n%s", joined)
	}

	restarted := storedServiceOn(t, st, rt, scriptedModel(t, "unused", "print(0)"))
	stored, err := restarted.AgentRun("acme", q.Run.ID)
	if err != nil {
		t.Fatalf("the question's run after a restart: %v", err)
	}
	if asJSON(t, stored) != asJSON(t, held) {
		t.Errorf("after a restart the question's run is\n%s\nbefore\n%s", asJSON(t, stored), asJSON(t, held))
	}
	if got := replayed(t, restarted, "acme", q.Run.ID, 0); !reflect.DeepEqual(got, heldEvents) {
		t.Errorf("after a restart the question's events are\n%s\nbefore\n%s", strings.Join(got, "\n"), joined)
	}
}

// TestAgentRunInterruptedWhileRunning: a run going on (its model still
// answering) when its service goes away reads, on the next service on
// the same store, as interrupted while it went on, its stream ending
// with a result that says so.
func TestAgentRunInterruptedWhileRunning(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	crashed := storedService(t, st, gatedModel{Provider: scriptedModel(t, "2", "print(1+1)"), open: make(chan struct{})})
	run, err := crashed.StartAgentRun(ctx, "acme", api.AgentRunRequest{Task: "add", TextMode: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := storedService(t, st, scriptedModel(t, "2", "print(1+1)"))
	got, err := svc.AgentRun("acme", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != api.AgentInterrupted || !strings.Contains(got.Reason, "while the run was going on") || got.FinishedAt == nil {
		t.Errorf("after the restart the run is %s, want interrupted while it was going on", asJSON(t, got))
	}
	events := replayed(t, svc, "acme", run.ID, 0)
	if n := len(events); n < 2 || !strings.HasPrefix(events[0], "agent_run ") || !strings.HasPrefix(events[n-1], "result ") ||
		!strings.Contains(events[n-1], "while the run was going on") {
		t.Errorf("events after the restart:\n%s\nwant agent_run ... result (interrupted)", strings.Join(events, "\n"))
	}
	if got, err := svc.CancelAgentRun(ctx, "acme", run.ID); err != nil || got.Status != api.AgentInterrupted {
		t.Errorf("cancelling the interrupted run: %s, %v; want it as it ended", asJSON(t, got), err)
	}
}
