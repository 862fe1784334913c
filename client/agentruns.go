package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// StartAgentRun starts the code agent on req (POST /v1/agent-runs) and
// returns the run at once, status "running"; follow it with
// FollowAgentRun, read it with GetAgentRun. The model and its key are
// the server's: a server without one answers an *APIError of status 501
// (code "not_configured", Field "model"). A budget above the server's
// maximum is a 400 naming it; a tenant with as many agent runs going on
// as its share allows gets 429 (IsTooManyRequests).
func (c *Client) StartAgentRun(ctx context.Context, req api.AgentRunRequest) (*api.AgentRun, error) {
	var run api.AgentRun
	if err := c.call(ctx, request{method: "POST", path: "/v1/agent-runs"}, req, &run); err != nil {
		return nil, err
	}
	if run.ID == "" {
		return nil, fmt.Errorf("client: POST /v1/agent-runs: the answer has no run id")
	}
	return &run, nil
}

// GetAgentRun returns agent run id (GET /v1/agent-runs/{id}): its status,
// the program waiting for approval if any, and once it ended its answer
// and trace (the JSON of the agent's Trace). IsNotFound reports a run the
// server does not hold: unknown, another tenant's, or ended long ago.
func (c *Client) GetAgentRun(ctx context.Context, id string) (*api.AgentRun, error) {
	var run api.AgentRun
	if err := c.call(ctx, request{method: "GET", path: agentRunPath(id)}, nil, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// ListAgentRuns returns the caller's newest agent runs (the first page
// of GET /v1/agent-runs: 50), newest first, without their traces.
func (c *Client) ListAgentRuns(ctx context.Context) ([]api.AgentRun, error) {
	var list api.AgentRunList
	if err := c.call(ctx, request{method: "GET", path: "/v1/agent-runs"}, nil, &list); err != nil {
		return nil, err
	}
	return list.AgentRuns, nil
}

// Approve decides approval approvalID of agent run runID (POST
// /v1/agent-runs/{id}/approvals/{approval_id}): approve runs the program,
// false refuses it and the run ends "denied"; reason is kept with the
// decision. An approval already decided is an *APIError of status 409
// (code "conflict"); an unknown one, 404.
func (c *Client) Approve(ctx context.Context, runID, approvalID string, approve bool, reason string) (*api.AgentDecision, error) {
	var d api.AgentDecision
	body := api.ApprovalRequest{Approve: &approve, Reason: reason}
	if err := c.call(ctx, request{method: "POST", path: agentRunPath(runID) + "/approvals/" + url.PathEscape(approvalID)}, body, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// CancelAgentRun stops agent run id (DELETE /v1/agent-runs/{id}) and
// returns it once it has ended, status "cancelled"; a run that had ended
// already is returned as it ended.
func (c *Client) CancelAgentRun(ctx context.Context, id string) (*api.AgentRun, error) {
	var run api.AgentRun
	if err := c.call(ctx, request{method: "DELETE", path: agentRunPath(id)}, nil, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// AgentEvent is one event of an agent run, as FollowAgentRun passes it
// on.
type AgentEvent struct {
	// Kind is the event's name: agent_run, step, code, stdout, stderr,
	// execution, approval or approval_decision; and answer and
	// session_rebuilt, for the question of an analysis.
	Kind string
	// Output is the chunk of a stdout or stderr event, redacted.
	Output sandbox.Data
	// AgentEvent holds the data of the other kinds: the field of Kind
	// is set (Run for agent_run, Step for step, and so on).
	api.AgentEvent
}

// FollowAgentRun follows agent run id (GET /v1/agent-runs/{id}/events)
// until it ends, passing each event to fn (which may be nil) as it comes
// (an approval event is the moment to call Approve), and returns the run
// as it ended, with its trace. A dropped connection is resumed with
// Last-Event-ID, as FollowRun's is. A run that already ended is replayed
// without its output events (its trace holds the output).
func (c *Client) FollowAgentRun(ctx context.Context, id string, fn func(AgentEvent)) (*api.AgentRun, error) {
	return c.followAgentEvents(ctx, agentRunPath(id)+"/events", fn)
}

// followAgentEvents follows the agent run whose events path serves, as
// FollowAgentRun does.
func (c *Client) followAgentEvents(ctx context.Context, path string, fn func(AgentEvent)) (*api.AgentRun, error) {
	if fn == nil {
		fn = func(AgentEvent) {}
	}
	var run api.AgentRun
	ev := events{
		result:    &run,
		resumable: true,
		output:    func(s sandbox.Stream, b []byte) { fn(AgentEvent{Kind: string(s), Output: sandbox.Data(b)}) },
		other: func(name string, data []byte) error {
			e, ok, err := decodeAgentEvent(name, data)
			if ok {
				fn(e)
			}
			return err
		},
	}
	if err := c.readStream(ctx, request{method: "GET", path: path}, ev); err != nil {
		return nil, err
	}
	return &run, nil
}

// decodeAgentEvent decodes the event name of an agent run's stream
// other than output, and reports whether it is one this client knows.
func decodeAgentEvent(name string, data []byte) (AgentEvent, bool, error) {
	e := AgentEvent{Kind: name}
	var target any
	switch name {
	case "agent_run":
		e.Run = &api.AgentRun{}
		target = e.Run
	case "step":
		e.Step = &api.AgentStep{}
		target = e.Step
	case "code":
		e.Code = &api.AgentCode{}
		target = e.Code
	case "execution":
		e.Execution = &api.AgentExecution{}
		target = e.Execution
	case "approval":
		e.Approval = &api.AgentApproval{}
		target = e.Approval
	case "approval_decision":
		e.Decision = &api.AgentDecision{}
		target = e.Decision
	case "answer":
		e.Question = &api.AnalysisQuestion{}
		target = e.Question
	case "session_rebuilt":
		e.Rebuild = &api.AnalysisRebuild{}
		target = e.Rebuild
	default:
		return e, false, nil // events of later versions
	}
	if err := json.Unmarshal(data, target); err != nil {
		return e, false, fmt.Errorf("decode %s event: %w", name, err)
	}
	return e, true, nil
}

// agentRunPath is the URL path of agent run id.
func agentRunPath(id string) string { return "/v1/agent-runs/" + url.PathEscape(id) }
