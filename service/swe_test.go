package service_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
	"github.com/crucible-sandbox/crucible/swe"
)

// sweRequest is a swe run's request on repo, asking for approvals if
// approve.
func sweRequest(repo []byte, approve bool) api.AgentRunRequest {
	return api.AgentRunRequest{Task: "fix the failing test in test_calc.py", Mode: api.ModeSWE, Approve: approve,
		SWERequest: api.SWERequest{Repo: &swe.Repo{Archive: repo}}}
}

// TestSWERunResolves drives a swe run through the service end to end, in
// real sessions of the data-science image, with a scripted model that
// reads the code, fixes the bug and submits (sweModel): each bash command
// waits for an approval, given through DecideApproval; the stream carries
// the run, the agent's steps, the command as code with its output
// (redacted) and execution, the approval and its decision, and the
// result; the result is resolved by the verification (the tests before:
// test_add failing; after, in a fresh sandbox: both passing), with the
// diff; the sessions' cells are recorded under the run; nothing the
// service answers holds the secret the command printed; another tenant
// reaches nothing of it; and a service started anew on the same store
// serves the run, its outcome and its events.
func TestSWERunResolves(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	svc := sweService(t, st, sweModel(t, fixerCalls...))
	run, err := svc.StartAgentRun(ctx, "acme", sweRequest(tarGz(t, bugRepo), true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.Mode != api.ModeSWE || run.Status != api.AgentRunning || run.SWE != nil {
		t.Fatalf("started %+v", run)
	}
	approvals := 0
	events := followFor(t, svc, "acme", run.ID, func(e service.Event) bool {
		if e.Kind == service.EventApproval {
			approvals++
			if e.Agent.Approval.Code != "cat calc.py NOTES.md" {
				t.Errorf("approval of %q, want the bash command", e.Agent.Approval.Code)
			}
			if _, err := svc.DecideApproval("other", run.ID, e.Agent.Approval.ID, true, ""); kindOf(err) != service.KindNotFound {
				t.Errorf("another tenant decides the approval: %v, want KindNotFound", err)
			}
			if _, err := svc.DecideApproval("acme", run.ID, e.Agent.Approval.ID, true, "reading is fine"); err != nil {
				t.Errorf("approve: %v", err)
			}
		}
		return true
	})
	if approvals != 1 {
		t.Errorf("%d approvals, want 1 (the one bash command)", approvals)
	}
	all := " " + kinds(events) + " "
	for _, k := range []service.EventKind{service.EventAgentRun, service.EventStep, service.EventApproval, service.EventDecision,
		service.EventCode, service.EventExecution, service.EventResult} {
		if !strings.Contains(all, " "+string(k)+" ") {
			t.Errorf("no %s event in %s", k, all)
		}
	}
	var steps []string
	for _, e := range events {
		if e.Kind == service.EventStep {
			steps = append(steps, e.Agent.Step.Kind)
		}
		if e.Output != nil && strings.Contains(string(e.Output), secret) {
			t.Errorf("streamed output holds the secret: %q", e.Output)
		}
	}
	for _, k := range []swe.StepKind{swe.StepSetup, swe.StepVerify} {
		if !slices.Contains(steps, string(k)) {
			t.Errorf("step events %v lack %s", steps, k)
		}
	}
	end := events[len(events)-1].Agent.Run
	checkResolved(t, end)

	recs, _, err := svc.List(ctx, "acme", store.Filter{AgentRun: run.ID})
	if err != nil || len(recs) == 0 {
		t.Errorf("records of the run's cells: %d, %v; want them linked to the run", len(recs), err)
	}
	for _, r := range recs {
		if strings.Contains(string(r.Stdout), secret) || strings.Contains(r.Code, secret) {
			t.Errorf("record %s holds the secret", r.ID)
		}
	}

	// Another tenant reaches nothing of it.
	if _, err := svc.AgentRun("other", run.ID); kindOf(err) != service.KindNotFound {
		t.Errorf("another tenant's AgentRun: %v, want KindNotFound", err)
	}
	if _, err := svc.AgentRunEvents(ctx, "other", run.ID, 0); kindOf(err) != service.KindNotFound {
		t.Errorf("another tenant's AgentRunEvents: %v, want KindNotFound", err)
	}
	if _, err := svc.CancelAgentRun(ctx, "other", run.ID); kindOf(err) != service.KindNotFound {
		t.Errorf("another tenant's CancelAgentRun: %v, want KindNotFound", err)
	}
	if list, _, err := svc.AgentRuns(ctx, "other", service.AgentRunPage{}); err != nil || len(list) != 0 {
		t.Errorf("another tenant lists %d runs (%v), want none", len(list), err)
	}
	if recs, _, err := svc.List(ctx, "other", store.Filter{AgentRun: run.ID}); err != nil || len(recs) != 0 {
		t.Errorf("another tenant lists %d records of the run (%v), want none", len(recs), err)
	}

	// A service started anew on the same store serves it as it ended.
	if err := svc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	again := storedService(t, st, sweModel(t, fixerCalls...))
	stored, err := again.AgentRun("acme", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkResolved(t, &stored)
	if stored.SWE.Diff != end.SWE.Diff {
		t.Errorf("the stored diff differs:\n%s\nwant\n%s", stored.SWE.Diff, end.SWE.Diff)
	}
	replay := follow(t, again, "acme", run.ID, nil)
	if n := len(replay); n == 0 || replay[n-1].Kind != service.EventResult || replay[n-1].Agent.Run.SWE == nil || len(replay[n-1].Agent.Run.Trace) == 0 {
		t.Errorf("the replayed stream %s does not end with the result, its outcome and trace", kinds(replay))
	}
	if list, _, err := again.AgentRuns(ctx, "acme", service.AgentRunPage{}); err != nil || len(list) != 1 || list[0].Mode != api.ModeSWE || list[0].Status != "resolved" {
		t.Errorf("the restarted service lists %+v (%v)", list, err)
	}
}

// checkResolved checks that run ended resolved, its outcome and trace
// those of the fix of bugRepo, the secret in none of them.
func checkResolved(t *testing.T, run *api.AgentRun) {
	t.Helper()
	if run.Status != api.AgentRunStatus(swe.StatusResolved) || run.Mode != api.ModeSWE || run.FinishedAt == nil || run.SWE == nil {
		t.Fatalf("ended %s (%s), mode %q, outcome %v; want resolved, swe, an outcome", run.Status, run.Reason, run.Mode, run.SWE)
	}
	o := run.SWE
	if !strings.Contains(o.Diff, "-    return a - b") || !strings.Contains(o.Diff, "+    return a + b") || !o.Submitted {
		t.Errorf("diff %q, submitted %v; want the fix, submitted", o.Diff, o.Submitted)
	}
	if o.Before == nil || o.Before.Failed != 1 || o.Before.Passed != 1 {
		t.Errorf("tests before %+v, want test_add failing and test_mul passing", o.Before)
	}
	if o.After == nil || o.After.Failed != 0 || o.After.Passed != 2 || o.After.Applied == "" {
		t.Errorf("tests after %+v, want both passing with the diff applied", o.After)
	}
	if !slices.Contains(o.FailToPass, "test_calc.py::test_add") || len(o.Broken) != 0 {
		t.Errorf("fail to pass %v, broken %v", o.FailToPass, o.Broken)
	}
	if len(run.Trace) == 0 || !strings.Contains(string(run.Trace), `"steps"`) || !strings.Contains(string(run.Trace), "cat calc.py") {
		t.Errorf("trace %.300s: want the swe trace with the steps", run.Trace)
	}
	for what, s := range map[string]string{"trace": string(run.Trace), "diff": o.Diff, "before": o.Before.Output, "reason": run.Reason} {
		if strings.Contains(s, secret) || strings.Contains(s, providerKey) {
			t.Errorf("the %s holds a secret", what)
		}
	}
}

// TestSWERunDenied: a bash command a person refuses ends the swe run
// denied, its reason naming the approval and the refusal's reason.
func TestSWERunDenied(t *testing.T) {
	ctx := context.Background()
	svc := sweService(t, openStore(t), sweModel(t, fixerCalls...))
	run, err := svc.StartAgentRun(ctx, "acme", sweRequest(tarGz(t, bugRepo), true), nil)
	if err != nil {
		t.Fatal(err)
	}
	var approval string
	events := followFor(t, svc, "acme", run.ID, func(e service.Event) bool {
		if e.Kind == service.EventApproval {
			approval = e.Agent.Approval.ID
			if _, err := svc.DecideApproval("acme", run.ID, approval, false, "no cat today"); err != nil {
				t.Errorf("refuse: %v", err)
			}
		}
		return true
	})
	end := events[len(events)-1].Agent.Run
	if end.Status != api.AgentRunStatus(swe.StatusDenied) || approval == "" || !strings.Contains(end.Reason, approval) || !strings.Contains(end.Reason, "no cat today") {
		t.Fatalf("ended %s: %q; want denied naming approval %s and the reason", end.Status, end.Reason, approval)
	}
	if end.SWE == nil || end.SWE.Diff != "" || end.SWE.After != nil {
		t.Errorf("outcome %+v: want no change, nothing verified", end.SWE)
	}
}

// TestSWERunCodePolicy: the model's bash commands are checked against
// the tenant's code policy, at least warn: in warn mode a command the
// policy names runs and a step event says what it found; in block mode
// it does not run and the run ends denied, its reason the policy's. The
// platform's own cells (the wrappers that run a command, edit a file)
// are not the model's code: in block mode a model whose commands the
// policy allows resolves its task.
func TestSWERunCodePolicy(t *testing.T) {
	ctx := context.Background()
	curl := []llmtest.Call{
		{Name: "bash", Args: map[string]string{"command": "curl --version >/dev/null 2>&1; echo ran-curl-line"}},
		{Name: "submit", Args: map[string]string{}},
	}
	for _, tc := range []struct {
		name    string
		mode    sandbox.PolicyMode
		calls   []llmtest.Call
		status  swe.Status
		finding bool // a step event names the policy's finding in the command
	}{
		{"off raised to warn", "", curl, swe.StatusNoChange, true},
		{"block", sandbox.PolicyBlock, curl, swe.StatusDenied, true},
		{"block, allowed commands", sandbox.PolicyBlock, fixerCalls, swe.StatusResolved, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := sweServiceWith(t, openStore(t), sweModel(t, tc.calls...), func(c *service.Config) {
				c.Tenants = map[string]service.TenantLimits{"acme": {Policy: tc.mode}}
			})
			run, err := svc.StartAgentRun(ctx, "acme", sweRequest(tarGz(t, bugRepo), false), nil)
			if err != nil {
				t.Fatal(err)
			}
			events := followFor(t, svc, "acme", run.ID, nil)
			var found, ran bool
			for _, e := range events {
				if e.Kind == service.EventStep && strings.Contains(e.Agent.Step.Message, "code policy") && strings.Contains(e.Agent.Step.Message, "curl") {
					found = true
				}
				if e.Kind == service.EventCode && strings.Contains(e.Agent.Code.Code, "ran-curl-line") {
					ran = true
				}
				if e.Kind == service.EventExecution && e.Agent.Execution.Status == sandbox.StatusBlocked {
					t.Errorf("a cell was blocked: %s", e.Agent.Execution.Reason)
				}
			}
			end := events[len(events)-1].Agent.Run
			if found != tc.finding || end.Status != api.AgentRunStatus(tc.status) {
				t.Fatalf("policy finding published %v, ended %s (%s); want %v, %s", found, end.Status, end.Reason, tc.finding, tc.status)
			}
			if blocked := tc.status == swe.StatusDenied; tc.finding && (ran == blocked || blocked && !strings.Contains(end.Reason, "code policy")) {
				t.Errorf("the command ran: %v; reason %q", ran, end.Reason)
			}
		})
	}
}

// TestSWERunInterruptedByRestart: a swe run waiting for an approval of a
// command when its service goes away (no shutdown: a crash) reads, on
// the next service on the same store, as a swe run interrupted, saying
// which approval it waited for, as a code agent's run does.
func TestSWERunInterruptedByRestart(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	crashed := sweService(t, st, sweModel(t, fixerCalls...))
	run, err := crashed.StartAgentRun(ctx, "acme", sweRequest(tarGz(t, bugRepo), true), nil)
	if err != nil {
		t.Fatal(err)
	}
	var approval *api.AgentApproval
	followFor(t, crashed, "acme", run.ID, func(e service.Event) bool {
		if e.Kind == service.EventApproval {
			approval = e.Agent.Approval
		}
		return approval == nil
	})
	if approval == nil {
		t.Fatal("no approval event")
	}
	svc := storedService(t, st, sweModel(t, fixerCalls...))
	got, err := svc.AgentRun("acme", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != api.AgentInterrupted || got.Mode != api.ModeSWE || !strings.Contains(got.Reason, approval.ID) || got.FinishedAt == nil {
		t.Errorf("after the restart the run is %+v, want a swe run interrupted, its reason naming %s", got, approval.ID)
	}
	if _, err := svc.DecideApproval("acme", run.ID, approval.ID, true, ""); kindOf(err) != service.KindConflict {
		t.Errorf("approving after the restart: %v, want KindConflict", err)
	}
}

// TestSWERunCancelled: cancelling a swe run while its command runs ends
// it cancelled at once, with what it had (the tests before, no change).
func TestSWERunCancelled(t *testing.T) {
	ctx := context.Background()
	svc := sweService(t, openStore(t), sweModel(t, llmtest.Call{Name: "bash", Args: map[string]string{"command": "echo sleeping; sleep 600"}}))
	run, err := svc.StartAgentRun(ctx, "acme", sweRequest(tarGz(t, bugRepo), false), nil)
	if err != nil {
		t.Fatal(err)
	}
	followFor(t, svc, "acme", run.ID, func(e service.Event) bool {
		return e.Output == nil || !strings.Contains(string(e.Output), "sleeping")
	})
	start := time.Now()
	end, err := svc.CancelAgentRun(ctx, "acme", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != api.AgentCancelled || end.Mode != api.ModeSWE || time.Since(start) > 30*time.Second {
		t.Errorf("cancelled: %s (%s) after %s, want cancelled at once", end.Status, end.Reason, time.Since(start))
	}
}
