package service

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxAgentStreamOutput bounds the output an agent run's stream carries,
// all its programs together; the rest is in the programs' run records
// and the trace.
const maxAgentStreamOutput = 8 << 20

// agentRun is an agent run the service holds: going on, or ended and
// retained. Its events go into its feed, never straight to a follower,
// so that a slow follower never slows the agent down.
type agentRun struct {
	s       *Service
	id      string
	tenant  string
	feed    *feed
	cancel  context.CancelFunc
	done    chan struct{} // closed when the run has ended
	timeout time.Duration // of an approval
	// keepOutput is how many bytes of output its events keep once it
	// ended: 0 for an agent run, maxQuestionReplayOutput for an
	// analysis's question.
	keepOutput int

	// persist writes the run through to the store; nil without one.
	persist *agentPersister

	mu        sync.Mutex
	info      api.AgentRun
	trace     json.RawMessage
	attempt   int
	pending   *pendingApproval
	approvals []api.AgentApproval // asked for, in order
	decided   map[string]api.AgentDecision
	changes   int                // of info, approvals and decisions: the store is behind while its count is lower
	refusal   *api.AgentDecision // the decision that denied the run
	stopped   string             // why the run was cancelled; "" if it was not
	streamed  int                // output bytes streamed so far
}

// pendingApproval is a program waiting for a decision.
type pendingApproval struct {
	approval api.AgentApproval
	decision chan api.AgentDecision // buffered: the decider never waits
}

// publish appends an agent event of kind to the run's feed.
func (run *agentRun) publish(kind EventKind, ev api.AgentEvent) {
	run.feed.publish(Event{Kind: kind, Agent: &ev})
}

// onEvent is the agent's progress (agent.Config.OnEvent).
func (run *agentRun) onEvent(e agent.Event) {
	msg, _ := run.s.cfg.Redactor.RedactString(e.Message)
	run.mu.Lock()
	run.attempt = e.Attempt
	run.mu.Unlock()
	run.publish(EventStep, api.AgentEvent{Step: &api.AgentStep{Kind: string(e.Kind), Attempt: e.Attempt, Message: msg}})
}

// currentAttempt is the attempt the agent last reported.
func (run *agentRun) currentAttempt() int {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.attempt
}

// output streams a program's output, already redacted by the session,
// up to maxAgentStreamOutput in all; one step event says where the rest
// is.
func (run *agentRun) output(stream sandbox.Stream, chunk []byte) {
	run.mu.Lock()
	before := run.streamed
	run.streamed += len(chunk)
	run.mu.Unlock()
	switch {
	case before >= maxAgentStreamOutput:
		return
	case before+len(chunk) > maxAgentStreamOutput:
		chunk = chunk[:maxAgentStreamOutput-before]
		defer run.publish(EventStep, api.AgentEvent{Step: &api.AgentStep{Kind: string(agent.StepExecute), Attempt: run.currentAttempt(),
			Message: fmt.Sprintf("output beyond %d bytes is not streamed: the records of the run's executions (GET /v1/runs?agent_run=%s) and its trace hold it", maxAgentStreamOutput, run.id)}})
	}
	run.feed.publish(Event{Kind: EventKind(stream), Output: sandbox.Data(chunk)})
}

// approve asks a person whether code may run (agent.Config.Approve): it
// writes the approval to the store, publishes it and waits for a
// decision, the approval timeout, or the run's end.
func (run *agentRun) approve(ctx context.Context, code string) (bool, error) {
	code, _ = run.s.cfg.Redactor.RedactString(code)
	now := time.Now().UTC()
	p := &pendingApproval{decision: make(chan api.AgentDecision, 1), approval: api.AgentApproval{
		ID: ids.New(ids.Approval), Attempt: run.currentAttempt(), Code: code, RequestedAt: now, ExpiresAt: now.Add(run.timeout)}}
	run.mu.Lock()
	run.pending = p
	run.info.Status, run.info.PendingApproval = api.AgentAwaitingApproval, &p.approval
	run.approvals = append(run.approvals, p.approval)
	run.changes++
	run.mu.Unlock()
	// Stored, with its event, before anyone sees it: after a crash, a
	// decision on it is refused as too late (the run interrupted), not
	// as unknown, and the stream a client follows still shows it.
	asked := api.AgentEvent{Approval: &p.approval}
	run.persist.ahead(Event{Kind: EventApproval, Agent: &asked})
	run.publish(EventApproval, asked)
	timer := time.NewTimer(run.timeout)
	defer timer.Stop()
	var d api.AgentDecision
	select {
	case d = <-p.decision:
	case <-timer.C:
		d = run.decideOnce(p, api.AgentDecision{By: "timeout", Reason: fmt.Sprintf("no decision within %s", run.timeout)})
	case <-ctx.Done():
		d = run.decideOnce(p, api.AgentDecision{By: "cancel", Reason: "the run was cancelled"})
	}
	run.publish(EventDecision, api.AgentEvent{Decision: &d})
	if !d.Approved && ctx.Err() != nil {
		return false, ctx.Err()
	}
	return d.Approved, nil
}

// decideOnce records d as p's decision, unless one was recorded already,
// and returns the decision that stands. It ends the wait: the run is
// running again.
func (run *agentRun) decideOnce(p *pendingApproval, d api.AgentDecision) api.AgentDecision {
	run.mu.Lock()
	defer run.mu.Unlock()
	if prev, ok := run.decided[p.approval.ID]; ok {
		return prev
	}
	d.ID, d.DecidedAt = p.approval.ID, time.Now().UTC()
	if run.decided == nil {
		run.decided = map[string]api.AgentDecision{}
	}
	run.decided[p.approval.ID] = d
	run.changes++
	if !d.Approved {
		run.refusal = &d
	}
	run.pending = nil
	if run.info.Status == api.AgentAwaitingApproval {
		run.info.Status, run.info.PendingApproval = api.AgentRunning, nil
	}
	p.decision <- d
	return d
}

// decide records a person's decision on approval id: KindNotFound for an
// approval the run never asked for, KindConflict for one decided
// already (by a person, the timeout or the run's end).
func (run *agentRun) decide(id string, approve bool, reason string) (api.AgentDecision, error) {
	reason, _ = run.s.cfg.Redactor.RedactString(reason)
	run.mu.Lock()
	p := run.pending
	prev, decided := run.decided[id]
	run.mu.Unlock()
	if decided {
		return prev, alreadyDecided(prev)
	}
	if p == nil || p.approval.ID != id {
		return api.AgentDecision{}, &Error{Kind: KindNotFound, Field: "approval_id", Rule: "must name an approval of the run",
			Message: fmt.Sprintf("agent run %s has no approval %q", run.id, id)}
	}
	d := run.decideOnce(p, api.AgentDecision{Approved: approve, Reason: reason, By: "api"})
	if d.By != "api" || d.Approved != approve || d.Reason != reason {
		return d, alreadyDecided(d) // the timeout or the end came first
	}
	return d, nil
}

func alreadyDecided(d api.AgentDecision) error {
	what := "refused"
	if d.Approved {
		what = "approved"
	}
	return &Error{Kind: KindConflict, Field: "approval_id", Rule: "must name an approval still waiting for a decision",
		Message: fmt.Sprintf("approval %s was already decided: %s (by %s)", d.ID, what, d.By)}
}

// stop cancels the run, if it is going on, saying why.
func (run *agentRun) stop(reason string) {
	run.mu.Lock()
	if !run.info.Status.Ended() && run.stopped == "" {
		run.stopped = reason
	}
	run.mu.Unlock()
	run.cancel()
}

// snapshot describes the run, with its trace if asked and it has one.
func (run *agentRun) snapshot(withTrace bool) api.AgentRun {
	run.mu.Lock()
	defer run.mu.Unlock()
	info := run.info
	if info.PendingApproval != nil {
		a := *info.PendingApproval
		info.PendingApproval = &a
	}
	if withTrace {
		info.Trace = run.trace
	}
	return info
}

// finish records how the run ended, trace and err being agent.Run's,
// and returns the run as it ended, with its trace. The store holds the
// run as it ended before the run reads as ended.
func (run *agentRun) finish(trace *agent.Trace, err error) api.AgentRun {
	red := run.s.cfg.Redactor
	var raw json.RawMessage
	if trace != nil {
		run.mu.Lock()
		if refusal := run.refusal; refusal != nil && trace.Status == agent.StatusDenied {
			trace.Reason = denialReason(*refusal)
		}
		run.mu.Unlock()
		var terr error
		if raw, terr = redactedTrace(red, trace); terr != nil {
			run.s.log.Error("encode agent trace", "agent_run", run.id, "err", terr)
		}
	}
	return run.settle(raw, err, func(end *api.AgentRun) {
		end.Status = api.AgentRunStatus(trace.Status)
		end.Reason, _ = red.RedactString(trace.Reason)
		end.Answer, _ = red.RedactString(trace.Answer)
	})
}

// settle records that the run ended, with trace raw: cancelled if it was
// stopped, failed with err if set, else as ended says (called only
// then). The store holds the run as it ended before the run reads as
// ended; it returns the run so, with its trace.
func (run *agentRun) settle(raw json.RawMessage, err error, ended func(*api.AgentRun)) api.AgentRun {
	red := run.s.cfg.Redactor
	now := storedTime()
	run.mu.Lock()
	end := run.info
	end.FinishedAt, end.PendingApproval = &now, nil
	switch {
	case run.stopped != "":
		end.Status, end.Reason = api.AgentCancelled, run.stopped
	case err != nil:
		end.Status = api.AgentRunStatus(agent.StatusFailed)
		end.Reason, _ = red.RedactString(err.Error())
	default:
		ended(&end)
	}
	run.mu.Unlock()
	end.Trace = raw
	run.persist.settle(end)
	run.mu.Lock()
	defer run.mu.Unlock()
	run.info, run.pending, run.trace = end, nil, raw
	run.info.Trace = nil
	return end
}

// denialReason is the trace's reason for a run a decision denied.
func denialReason(d api.AgentDecision) string {
	why := "refused"
	switch d.By {
	case "timeout":
		why = "not decided in time"
	case "cancel":
		why = "not decided before the run was cancelled"
	}
	reason := fmt.Sprintf("execution not approved: approval %s %s", d.ID, why)
	if d.Reason != "" {
		reason += ": " + d.Reason
	}
	return reason
}
