package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// agentRunTests are the agent runs' part of the suite (runSuite), run on
// SQLite and PostgreSQL.
var agentRunTests = []struct {
	name string
	fn   func(t *testing.T, s Store)
}{
	{"agent runs: round trip and upsert", testAgentRunRoundTrip},
	{"agent runs: validation", testAgentRunValidation},
	{"agent runs: tenant isolation", testAgentRunTenants},
	{"agent runs: list pagination", testAgentRunList},
	{"agent runs: events", testAgentRunEvents},
	{"agent runs: unfinished", testUnfinishedAgentRuns},
	{"agent runs: a swe run's mode and outcome", testSWEAgentRun},
}

// agentRecord is an agent run of the tests, created s seconds after the
// base time, with status st.
func agentRecord(id string, s int, st api.AgentRunStatus) *AgentRunRecord {
	return &AgentRunRecord{Run: api.AgentRun{ID: id, Status: st, Task: "add 1 and 1", Image: "python", Model: "openai:scripted",
		CreatedAt: time.Date(2024, 3, 1, 12, 0, s, 0, time.UTC)}}
}

func mustSaveAgentRun(t *testing.T, s Store, tenant string, rec *AgentRunRecord, events ...AgentRunEvent) {
	t.Helper()
	if err := s.SaveAgentRun(ctx, tenant, rec.Run.ID, rec, events); err != nil {
		t.Fatalf("SaveAgentRun(%s): %v", rec.Run.ID, err)
	}
}

func testAgentRunRoundTrip(t *testing.T, s Store) {
	rec := agentRecord("agr_1", 0, api.AgentAwaitingApproval)
	rec.Run.CreatedAt = at(1) // nanoseconds and a zone: read back in UTC, to the microsecond
	approval := api.AgentApproval{ID: "apr_1", Attempt: 1, Code: "print(2)", RequestedAt: at(2).UTC().Truncate(time.Microsecond), ExpiresAt: at(3).UTC().Truncate(time.Microsecond)}
	rec.Run.PendingApproval = &approval
	rec.Approvals = []api.AgentApproval{approval}
	mustSaveAgentRun(t, s, "acme", rec)
	got, err := s.GetAgentRun(ctx, "acme", "agr_1")
	if err != nil {
		t.Fatal(err)
	}
	want := *rec
	want.Tenant = "acme"
	want.Run.CreatedAt = time.UnixMicro(at(1).UnixMicro()).UTC()
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("GetAgentRun = %+v\nwant %+v", got, &want)
	}

	// The same ID again replaces it: the run ended, with its trace.
	end := time.Date(2024, 3, 1, 12, 1, 0, 0, time.UTC)
	rec.Run.Status, rec.Run.PendingApproval, rec.Run.FinishedAt = "answered", nil, &end
	rec.Run.Answer, rec.Run.Trace = "2", json.RawMessage(`{"status":"answered","steps":[]}`)
	rec.Decisions = []api.AgentDecision{{ID: "apr_1", Approved: true, By: "api", DecidedAt: end}}
	for range 2 { // idempotent
		mustSaveAgentRun(t, s, "acme", rec)
	}
	got, err = s.GetAgentRun(ctx, "acme", "agr_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Run.Status != "answered" || got.Run.Answer != "2" || got.Run.PendingApproval != nil || string(got.Run.Trace) != string(rec.Run.Trace) ||
		!reflect.DeepEqual(got.Decisions, rec.Decisions) || !reflect.DeepEqual(got.Approvals, rec.Approvals) || !got.Run.FinishedAt.Equal(end) {
		t.Errorf("after the upsert: %+v", got)
	}
	if !got.Run.CreatedAt.Equal(want.Run.CreatedAt) {
		t.Errorf("created_at = %v, want it kept (%v)", got.Run.CreatedAt, want.Run.CreatedAt)
	}
	if _, err := s.GetAgentRun(ctx, "acme", "agr_none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetAgentRun of no run: %v, want ErrNotFound", err)
	}
}

func testAgentRunValidation(t *testing.T, s Store) {
	ok := agentRecord("agr_1", 0, api.AgentRunning)
	for _, tc := range []struct {
		name, tenant, id string
		rec              func() *AgentRunRecord
		events           []AgentRunEvent
	}{
		{"no tenant", "", "agr_1", func() *AgentRunRecord { return ok }, nil},
		{"no id", "acme", "", func() *AgentRunRecord { return ok }, nil},
		{"another id", "acme", "agr_2", func() *AgentRunRecord { return ok }, nil},
		{"no status", "acme", "agr_1", func() *AgentRunRecord { r := *ok; r.Run.Status = ""; return &r }, nil},
		{"no creation time", "acme", "agr_1", func() *AgentRunRecord { r := *ok; r.Run.CreatedAt = time.Time{}; return &r }, nil},
		{"trace not JSON", "acme", "agr_1", func() *AgentRunRecord { r := *ok; r.Run.Trace = json.RawMessage("{"); return &r }, nil},
		{"event not JSON", "acme", "agr_1", func() *AgentRunRecord { return ok }, []AgentRunEvent{{ID: 1, Kind: "step", Data: json.RawMessage("nope")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.SaveAgentRun(ctx, tc.tenant, tc.id, tc.rec(), tc.events); err == nil {
				t.Error("SaveAgentRun succeeded, want an error")
			}
		})
	}
	// Nothing of a refused save is kept: not the run of the last case.
	if _, err := s.GetAgentRun(ctx, "acme", "agr_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after refused saves: %v, want ErrNotFound", err)
	}
}

func testAgentRunTenants(t *testing.T, s Store) {
	mustSaveAgentRun(t, s, "acme", agentRecord("agr_1", 0, api.AgentRunning), AgentRunEvent{ID: 1, Kind: "agent_run", Data: json.RawMessage(`{}`)})
	if _, err := s.GetAgentRun(ctx, "other", "agr_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another tenant's GetAgentRun: %v, want ErrNotFound", err)
	}
	if runs, _, err := s.ListAgentRuns(ctx, "other", AgentRunFilter{}); err != nil || len(runs) != 0 {
		t.Errorf("another tenant's ListAgentRuns = %v, %v; want none", runs, err)
	}
	if events, err := s.AgentRunEvents(ctx, "other", "agr_1", 0); err != nil || len(events) != 0 {
		t.Errorf("another tenant's AgentRunEvents = %v, %v; want none", events, err)
	}
	// Another tenant cannot overwrite the run, nor its events.
	taken := agentRecord("agr_1", 5, "answered")
	if err := s.SaveAgentRun(ctx, "other", "agr_1", taken, nil); err == nil {
		t.Error("another tenant saved over the run")
	}
	if err := s.SaveAgentRun(ctx, "other", "agr_1", nil, []AgentRunEvent{{ID: 1, Kind: "result", Data: json.RawMessage(`{"x":1}`)}}); err != nil {
		t.Fatal(err) // refused in effect: the row stays the owner's
	}
	got, err := s.GetAgentRun(ctx, "acme", "agr_1")
	if err != nil || got.Run.Status != api.AgentRunning {
		t.Errorf("the owner's run after another tenant's save: %+v, %v", got, err)
	}
	events, err := s.AgentRunEvents(ctx, "acme", "agr_1", 0)
	if err != nil || len(events) != 1 || events[0].Kind != "agent_run" {
		t.Errorf("the owner's events after another tenant's save: %+v, %v", events, err)
	}
}

func testAgentRunList(t *testing.T, s Store) {
	const n = 7
	for i := range n {
		rec := agentRecord(fmt.Sprintf("agr_%d", i), i/2, api.AgentRunning) // pairs share a creation time: the ID orders them
		rec.Run.Trace = json.RawMessage(`{"big":"trace"}`)
		mustSaveAgentRun(t, s, "acme", rec)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("paging does not end")
		}
		runs, next, err := s.ListAgentRuns(ctx, "acme", AgentRunFilter{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Trace != nil {
				t.Errorf("listed run %s has its trace", r.ID)
			}
			got = append(got, r.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	want := []string{"agr_6", "agr_5", "agr_4", "agr_3", "agr_2", "agr_1", "agr_0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	if _, _, err := s.ListAgentRuns(ctx, "acme", AgentRunFilter{Cursor: "!!"}); !errors.Is(err, ErrBadCursor) {
		t.Errorf("a bad cursor: %v, want ErrBadCursor", err)
	}
}

func testAgentRunEvents(t *testing.T, s Store) {
	rec := agentRecord("agr_1", 0, api.AgentRunning)
	ev := func(id int64, kind, data string) AgentRunEvent {
		return AgentRunEvent{ID: id, Kind: kind, Data: json.RawMessage(data)}
	}
	mustSaveAgentRun(t, s, "acme", rec, ev(1, "agent_run", `{"run":{"id":"agr_1"}}`), ev(2, "step", `{"step":{"kind":"plan"}}`))
	// Events alone, in batches, one saved again (idempotent).
	for _, batch := range [][]AgentRunEvent{{ev(12, "stdout", `"0123456789"`)}, {ev(12, "stdout", `"0123456789"`), ev(13, "execution", `{}`)}} {
		if err := s.SaveAgentRun(ctx, "acme", "agr_1", nil, batch); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		after int64
		want  []int64
	}{{0, []int64{1, 2, 12, 13}}, {2, []int64{12, 13}}, {5, []int64{12, 13}}, {13, nil}, {99, nil}} {
		events, err := s.AgentRunEvents(ctx, "acme", "agr_1", tc.after)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, e := range events {
			ids = append(ids, e.ID)
		}
		if !reflect.DeepEqual(ids, tc.want) {
			t.Errorf("after %d: events %v, want %v", tc.after, ids, tc.want)
		}
	}
	events, _ := s.AgentRunEvents(ctx, "acme", "agr_1", 11)
	if events[0].Kind != "stdout" || string(events[0].Data) != `"0123456789"` {
		t.Errorf("event 12 = %+v", events[0])
	}
	got, err := s.GetAgentRun(ctx, "acme", "agr_1")
	if err != nil || got.LastEvent != 13 {
		t.Errorf("LastEvent = %d, %v; want 13", got.LastEvent, err)
	}
}

func testUnfinishedAgentRuns(t *testing.T, s Store) {
	for i, st := range []api.AgentRunStatus{api.AgentRunning, api.AgentAwaitingApproval, "answered", api.AgentCancelled, "interrupted"} {
		mustSaveAgentRun(t, s, fmt.Sprintf("t%d", i), agentRecord(fmt.Sprintf("agr_%d", i), i, st))
	}
	recs, err := s.UnfinishedAgentRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Tenant+"/"+r.Run.ID)
	}
	if want := []string{"t0/agr_0", "t1/agr_1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("unfinished = %v, want %v", got, want)
	}
}
