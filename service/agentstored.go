package service

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/store"
)

// The agent runs the service no longer holds in memory (ended beyond its
// retention, or before the process started) are read from the store:
// what the persister wrote (agentpersist.go). Such a run has ended: at
// start, the service ends the ones a crash left going on
// (settleAgentRuns).

// errNoAgentRun is the refusal of an agent run neither the service nor
// its store holds (or another tenant's).
func errNoAgentRun(id string) error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf("no agent run %q", id),
		Field: "id", Rule: "must name an agent run of yours"}
}

// storedAgentRun returns tenant's agent run id from the store, or
// errNoAgentRun when the service has no store or the store no such run.
// held is the service's own refusal, returned as it is when it is not
// KindNotFound.
func (s *Service) storedAgentRun(ctx context.Context, tenant, id string, held error) (*store.AgentRunRecord, error) {
	var e *Error
	if s.cfg.Store == nil || !errors.As(held, &e) || e.Kind != KindNotFound {
		return nil, held
	}
	ctx, cancel := context.WithTimeout(ctx, agentStoreTimeout)
	defer cancel()
	rec, err := s.cfg.Store.GetAgentRun(ctx, tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, held
	}
	if err != nil {
		return nil, fmt.Errorf("service: agent run %s: %w", id, err)
	}
	return s.settleOrphan(ctx, rec)
}

// AgentRunPage pages AgentRuns.
type AgentRunPage struct {
	// Limit is the page size: store.DefaultLimit when zero, at most
	// store.MaxLimit.
	Limit int
	// Cursor continues a listing: the next cursor of the previous page.
	Cursor string
}

// AgentRuns lists tenant's agent runs, newest first, without their
// traces, one page at a time: next is the cursor of the following page,
// "" after the last. With a store it lists those the store holds, each
// as the service holds it if it does (a run going on changes faster than
// it is written); without one, those the service holds, on one page. A
// cursor that is not one is an input error naming "cursor".
func (s *Service) AgentRuns(ctx context.Context, tenant string, page AgentRunPage) ([]api.AgentRun, string, error) {
	held := s.agents.list(tenant)
	if s.cfg.Store == nil {
		infos := make([]api.AgentRun, len(held))
		for i, run := range held {
			infos[i] = run.snapshot(false)
		}
		return infos, "", nil
	}
	runs, next, err := s.cfg.Store.ListAgentRuns(ctx, tenant, store.AgentRunFilter{Limit: page.Limit, Cursor: page.Cursor})
	if errors.Is(err, store.ErrBadCursor) {
		return nil, "", invalid("cursor", "must be the next cursor of an earlier page of agent runs, got %q", page.Cursor)
	}
	if err != nil {
		return nil, "", fmt.Errorf("service: list agent runs: %w", err)
	}
	for i := range runs {
		if j := slices.IndexFunc(held, func(run *agentRun) bool { return run.id == runs[i].ID }); j >= 0 {
			runs[i] = held[j].snapshot(false)
		}
	}
	return runs, next, nil
}

// storedEvents returns the events of rec after position after, as
// AgentRunEvents does: nil when none comes after it. The result's trace
// is the record's; a run whose last write before a crash was its end
// but not its result gets its result at the position after its last
// event.
func (s *Service) storedEvents(ctx context.Context, rec *store.AgentRunRecord, after int64) ([]Event, error) {
	last := rec.LastEvent
	var events []Event
	if last > 0 {
		// From the last event at least: whether it is the result tells.
		ctx, cancel := context.WithTimeout(ctx, agentStoreTimeout)
		defer cancel()
		rows, err := s.cfg.Store.AgentRunEvents(ctx, rec.Tenant, rec.Run.ID, min(after, last-1))
		if err != nil {
			return nil, fmt.Errorf("service: agent run %s: %w", rec.Run.ID, err)
		}
		for _, row := range rows {
			e, err := eventOf(row)
			if err != nil {
				return nil, fmt.Errorf("service: agent run %s: event %d: %w", rec.Run.ID, row.ID, err)
			}
			events = append(events, e)
		}
	}
	if n := len(events); rec.Run.Status.Ended() && (n == 0 || events[n-1].Kind != EventResult) {
		end := rec.Run
		events = append(events, Event{ID: last + 1, Kind: EventResult, Agent: &api.AgentEvent{Run: &end}})
	}
	if n := len(events); n > 0 && events[n-1].Kind == EventResult && events[n-1].Agent.Run != nil && events[n-1].Agent.Run.Trace == nil {
		end := *events[n-1].Agent.Run
		end.Trace = rec.Run.Trace
		events[n-1].Agent.Run = &end
	}
	events = since(events, after)
	if len(events) == 0 {
		return nil, nil
	}
	return events, nil
}

// decideStored refuses a decision on an approval of rec, a run that has
// ended: KindConflict for one it asked for (decided or not: too late),
// KindNotFound for one it never asked for.
func decideStored(rec *store.AgentRunRecord, approvalID string) error {
	if i := slices.IndexFunc(rec.Decisions, func(d api.AgentDecision) bool { return d.ID == approvalID }); i >= 0 {
		return alreadyDecided(rec.Decisions[i])
	}
	if !slices.ContainsFunc(rec.Approvals, func(a api.AgentApproval) bool { return a.ID == approvalID }) {
		return &Error{Kind: KindNotFound, Field: "approval_id", Rule: "must name an approval of the run",
			Message: fmt.Sprintf("agent run %s has no approval %q", rec.Run.ID, approvalID)}
	}
	return &Error{Kind: KindConflict, Field: "approval_id", Rule: "must name an approval still waiting for a decision",
		Message: fmt.Sprintf("approval %s can no longer be decided: agent run %s ended %s before it was (%s)", approvalID, rec.Run.ID, rec.Run.Status, rec.Run.Reason)}
}

// The reasons of the runs settleAgentRuns ends.
const (
	interruptedRunning  = "interrupted: the server stopped while the run was going on; its events up to then are kept"
	interruptedApproval = "interrupted: the server stopped while the run waited for a decision on approval %s, which can no longer be given"
)

// settleAgentRuns ends, as interrupted, the agent runs the store holds
// as going on or waiting for an approval that settle picks, with the
// reason it gives ("" for the restart's): a process that wrote them is
// gone. Each keeps its events, and gets a result event saying why it
// ended. It returns how many it ended.
func settleAgentRuns(ctx context.Context, st store.Store, settle func(store.AgentRunRecord) (bool, string)) (int, error) {
	recs, err := st.UnfinishedAgentRuns(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rec := range recs {
		ok, why := settle(rec)
		if !ok {
			continue
		}
		if err := settleAgentRun(ctx, st, &rec, why); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// settleAgentRun ends rec, unfinished, as interrupted, with reason
// (interruptedRunning, or interruptedApproval, for ""), and writes it
// with its result event.
func settleAgentRun(ctx context.Context, st store.Store, rec *store.AgentRunRecord, reason string) error {
	now := storedTime()
	end := rec.Run
	end.Status, end.Reason, end.FinishedAt = api.AgentInterrupted, interruptedRunning, &now
	if p := end.PendingApproval; p != nil {
		end.Reason = fmt.Sprintf(interruptedApproval, p.ID)
	}
	if reason != "" {
		end.Reason = reason
	}
	end.PendingApproval = nil
	rec.Run = end
	result := end
	result.Trace = nil
	row, err := eventRow(Event{ID: rec.LastEvent + 1, Kind: EventResult, Agent: &api.AgentEvent{Run: &result}})
	if err != nil {
		return err
	}
	if err := st.SaveAgentRun(ctx, rec.Tenant, end.ID, rec, []store.AgentRunEvent{row}); err != nil {
		return err
	}
	rec.LastEvent++
	return nil
}
