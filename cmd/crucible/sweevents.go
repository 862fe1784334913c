package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/swe"
)

// request is the agent run of mode swe the flags ask for, here or on
// --server. Budgets and limits not given are the service's defaults,
// within its maxima, rather than this command's.
func (f *sweFlags) request(task swe.Task, image string) api.AgentRunRequest {
	repo := task.Repo
	req := api.AgentRunRequest{
		Mode: api.ModeSWE, Task: task.Prompt, Image: image, Approve: f.approve, TextMode: f.textMode,
		SWERequest: api.SWERequest{Repo: &repo, TestCommand: task.TestCommand, Tests: task.Tests},
	}
	if f.changed("timeout") {
		req.CellTimeoutMS = f.timeout.Milliseconds()
	}
	if f.changed("memory") {
		req.Limits = sandbox.Limits{MemoryBytes: f.memory}
	}
	if f.changed("max-steps") {
		req.MaxSteps = f.maxSteps
	}
	if f.changed("max-wall") {
		req.MaxWallMS = f.maxWall.Milliseconds()
	}
	return req
}

// sweEvents shows an agent run's events as progress and answers its
// approvals; the same for a run here and one on --server.
type sweEvents struct {
	progress *sweProgress
	// ask asks a person about a command (nil without --approve); decide
	// sends the answer to the run.
	ask    func(context.Context, string) (bool, error)
	decide func(approvalID string, approve bool) error
	// ended is the run as its last event gave it.
	ended *api.AgentRun
}

// newSWEEvents starts showing events on d; decide answers approvals when
// --approve is set.
func (f *sweFlags) newSWEEvents(d *display, decide func(approvalID string, approve bool) error) *sweEvents {
	e := &sweEvents{progress: newSWEProgress(d), decide: decide}
	if f.approve {
		e.ask = approveOn(os.Stdin, os.Stderr)
	}
	return e
}

// event shows one event of kind (its output for stdout and stderr, a
// holds the others') and, for an approval, asks and answers it before it
// returns. A code event is not shown: the step before it names the
// command, and an approval shows it whole.
func (e *sweEvents) event(ctx context.Context, kind string, output sandbox.Data, a *api.AgentEvent) {
	switch {
	case kind == string(sandbox.StreamStdout) || kind == string(sandbox.StreamStderr):
		e.progress.event(swe.Event{Output: output})
	case a == nil:
	case a.Step != nil:
		e.progress.event(swe.Event{Kind: swe.StepKind(a.Step.Kind), Step: a.Step.Attempt, Message: a.Step.Message})
	case a.Approval != nil && e.ask != nil:
		e.progress.flush()
		ok, _ := e.ask(ctx, a.Approval.Code)
		if err := e.decide(a.Approval.ID, ok); err != nil {
			e.progress.event(swe.Event{Message: fmt.Sprintf("the answer could not be sent: %v", err)})
		}
	case a.Run != nil:
		e.ended = a.Run
	}
}

// close writes the progress still queued.
func (e *sweEvents) close() { e.progress.close() }

// resultOfAgentRun is the swe.Result an ended agent run of mode swe
// carries: its status, reason and outcome, and its trace when it is a
// swe.Trace.
func resultOfAgentRun(run *api.AgentRun) (*swe.Result, error) {
	if run == nil {
		return nil, platformError(fmt.Errorf("the agent run ended without its outcome"))
	}
	if run.Mode != api.ModeSWE || run.SWE == nil {
		if run.Status == api.AgentCancelled || run.Status == api.AgentInterrupted {
			return &swe.Result{ID: run.ID, Status: swe.StatusFailed, Reason: string(run.Status) + ": " + run.Reason}, nil
		}
		return nil, platformError(fmt.Errorf("agent run %s ended %s without a swe outcome: the server does not run mode swe", run.ID, run.Status))
	}
	o := run.SWE
	res := &swe.Result{ID: run.ID, Status: swe.Status(run.Status), Reason: run.Reason, Diff: o.Diff, Before: o.Before, After: o.After,
		FailToPass: o.FailToPass, PassToPass: o.PassToPass, Broken: o.Broken, TestEdits: o.TestEdits, Submitted: o.Submitted}
	if len(run.Trace) > 0 {
		_ = json.Unmarshal(run.Trace, &res.Trace) // another shape leaves the trace empty
	}
	return res, nil
}
