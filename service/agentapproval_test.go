package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestAgentRunApprovals: with approve set, each program waits for a
// decision, shown in the run and in the events. Approved, it runs; a
// refusal ends the run denied with the reason given; no decision in time
// ends it denied too. Deciding an unknown approval is KindNotFound,
// deciding one twice KindConflict.
func TestAgentRunApprovals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		decide     *bool // nil: no decision, the timeout decides
		reason     string
		wantStatus api.AgentRunStatus
		wantReason string
	}{
		{"approved", ptr(true), "looks fine", "answered", ""},
		{"refused", ptr(false), "it touches real data", "denied", "refused: it touches real data"},
		{"not decided in time", nil, "", "denied", "not decided in time: no decision within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := agentService(t, scriptedModel(t, "2", "print(1+1)"), func(c *service.Config) {
				if tc.decide == nil {
					c.Agents.ApprovalTimeout = time.Millisecond
				}
			})
			run, err := svc.StartAgentRun(context.Background(), "acme", api.AgentRunRequest{Task: "add", TextMode: true, Approve: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			events := follow(t, svc, "acme", run.ID, func(e service.Event) bool {
				if e.Kind != service.EventApproval || tc.decide == nil {
					return true
				}
				a := e.Agent.Approval
				if a.Code != "print(1+1)" || !strings.HasPrefix(a.ID, "apr_") || !a.ExpiresAt.After(a.RequestedAt) {
					t.Errorf("approval %+v", a)
				}
				got, err := svc.AgentRun("acme", run.ID)
				if err != nil || got.Status != api.AgentAwaitingApproval || got.PendingApproval == nil || got.PendingApproval.ID != a.ID {
					t.Errorf("while waiting, the run is %+v (%v), want awaiting_approval with the approval", got, err)
				}
				if _, err := svc.DecideApproval("acme", run.ID, "apr_0000000000000000", true, ""); kindOf(err) != service.KindNotFound {
					t.Errorf("an unknown approval: %v, want KindNotFound", err)
				}
				if _, err := svc.DecideApproval("other", run.ID, a.ID, true, ""); kindOf(err) != service.KindNotFound {
					t.Errorf("another tenant's approval: %v, want KindNotFound", err)
				}
				d, err := svc.DecideApproval("acme", run.ID, a.ID, *tc.decide, tc.reason)
				if err != nil || d.Approved != *tc.decide || d.By != "api" || d.Reason != tc.reason {
					t.Errorf("DecideApproval = %+v, %v", d, err)
				}
				if _, err := svc.DecideApproval("acme", run.ID, a.ID, !*tc.decide, "changed my mind"); kindOf(err) != service.KindConflict {
					t.Errorf("a second decision: %v, want KindConflict", err)
				}
				return true
			})
			for _, k := range []service.EventKind{service.EventApproval, service.EventDecision} {
				if !strings.Contains(kinds(events), string(k)) {
					t.Errorf("no %s event in %s", k, kinds(events))
				}
			}
			if approved := tc.decide != nil && *tc.decide; strings.Contains(kinds(events), "code") != approved {
				t.Errorf("events %s: a code event must come if and only if the program was approved", kinds(events))
			}
			end := events[len(events)-1].Agent.Run
			if end.Status != tc.wantStatus || !strings.Contains(end.Reason, tc.wantReason) || end.PendingApproval != nil {
				t.Errorf("ended %s (%s), want %s (%s)", end.Status, end.Reason, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

// TestAgentRunCancel: cancelling a run that waits for an approval ends
// it cancelled, and its approval can no longer be decided.
func TestAgentRunCancel(t *testing.T) {
	svc := agentService(t, scriptedModel(t, "2", "print(1+1)"), nil)
	run, err := svc.StartAgentRun(context.Background(), "acme", api.AgentRunRequest{Task: "add", TextMode: true, Approve: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var approval string
	follow(t, svc, "acme", run.ID, func(e service.Event) bool {
		if e.Kind == service.EventApproval {
			approval = e.Agent.Approval.ID
			return false
		}
		return true
	})
	end, err := svc.CancelAgentRun(context.Background(), "acme", run.ID)
	if err != nil || end.Status != api.AgentCancelled || end.FinishedAt == nil {
		t.Fatalf("CancelAgentRun = %+v, %v; want it cancelled", end, err)
	}
	if _, err := svc.DecideApproval("acme", run.ID, approval, true, ""); kindOf(err) != service.KindConflict {
		t.Errorf("deciding after the cancel: %v, want KindConflict", err)
	}
	again, err := svc.CancelAgentRun(context.Background(), "acme", run.ID)
	if err != nil || again.Status != api.AgentCancelled {
		t.Errorf("cancelling an ended run: %+v, %v; want it as it ended", again, err)
	}
}

// TestAgentRunShares: agent runs are admitted within the tenant's share
// (half the server's by default) and the server's maximum, and refused
// (KindBusy) beyond; a run that ended gives its place back.
func TestAgentRunShares(t *testing.T) {
	svc := agentService(t, scriptedModel(t, "2", "print(1+1)"), func(c *service.Config) { c.Agents.MaxRuns = 2 })
	waiting := api.AgentRunRequest{Task: "add", TextMode: true, Approve: true}
	a, err := svc.StartAgentRun(context.Background(), "a", waiting, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StartAgentRun(context.Background(), "a", waiting, nil); kindOf(err) != service.KindBusy {
		t.Errorf("a second run of the tenant: %v, want KindBusy (its share is 1)", err)
	}
	if _, err := svc.StartAgentRun(context.Background(), "b", waiting, nil); err != nil {
		t.Errorf("another tenant's run: %v", err)
	}
	if _, err := svc.StartAgentRun(context.Background(), "c", waiting, nil); kindOf(err) != service.KindBusy {
		t.Errorf("a third run: %v, want KindBusy (the server's maximum is 2)", err)
	}
	if _, err := svc.CancelAgentRun(context.Background(), "a", a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StartAgentRun(context.Background(), "a", waiting, nil); err != nil {
		t.Errorf("after its run ended, the tenant's next: %v", err)
	}
}

// TestAgentRunEventsResume: a follower resumes after any event's ID and
// gets exactly the events after it; after the last it gets none (nil);
// beyond the last of a run going on is an input error naming "after".
func TestAgentRunEventsResume(t *testing.T) {
	svc := agentService(t, scriptedModel(t, "2", "print(1+1)"), nil)
	run, err := svc.StartAgentRun(context.Background(), "acme", api.AgentRunRequest{Task: "add", TextMode: true, Approve: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var approval service.Event
	follow(t, svc, "acme", run.ID, func(e service.Event) bool {
		approval = e
		return e.Kind != service.EventApproval
	})
	if _, err := svc.AgentRunEvents(context.Background(), "acme", run.ID, approval.ID+1); !isInput(err, "after") {
		t.Errorf("after beyond the last event: %v, want an input error naming after", err)
	}
	if _, err := svc.DecideApproval("acme", run.ID, approval.Agent.Approval.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	follow(t, svc, "acme", run.ID, nil) // to its end
	all := follow(t, svc, "acme", run.ID, nil)
	if strings.Contains(kinds(all), "stdout") {
		t.Errorf("an ended run's stream still holds its output: %s", kinds(all))
	}
	for i, e := range all[:len(all)-1] {
		events, err := svc.AgentRunEvents(context.Background(), "acme", run.ID, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		var rest []service.Event
		for r := range events {
			rest = append(rest, r)
		}
		if kinds(rest) != kinds(all[i+1:]) {
			t.Errorf("after %d: %s, want %s", e.ID, kinds(rest), kinds(all[i+1:]))
		}
	}
	if events, err := svc.AgentRunEvents(context.Background(), "acme", run.ID, all[len(all)-1].ID); err != nil || events != nil {
		t.Errorf("after the result: %v, %v; want nothing", events, err)
	}
}

func ptr[T any](v T) *T { return &v }

// isInput reports whether err is an input error naming field.
func isInput(err error, field string) bool {
	var ie *sandbox.InputError
	return errors.As(err, &ie) && ie.Field == field
}
