package main

import (
	"context"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/swe"
)

// runSWELocal runs the task as an agent run of mode swe of a service in
// this process, as crucible serve would run it: the model's commands
// checked against the code policy and approved when asked, everything the
// model is shown redacted, every execution and the run itself recorded in
// --db (a crucible serve on the same store lists it).
func runSWELocal(ctx context.Context, f *sweFlags, task swe.Task, d *display) (*swe.Result, error) {
	model, err := f.model()
	if err != nil {
		return nil, err
	}
	// The service's maxima are what the flags ask: here the user is the
	// operator.
	maxima := service.AgentBudgets{MaxSteps: f.maxSteps, MaxWallMS: f.maxWall.Milliseconds(), CellTimeoutMS: f.timeout.Milliseconds()}
	p, err := f.start(ctx, d, "swe", service.AgentConfig{Model: model, Maxima: maxima})
	if err != nil {
		return nil, err
	}
	defer p.close()
	req := f.request(task, "")
	req.MaxSteps, req.MaxWallMS, req.CellTimeoutMS = f.maxSteps, maxima.MaxWallMS, maxima.CellTimeoutMS
	var runID string
	events := f.newSWEEvents(d, func(approvalID string, approve bool) error {
		_, err := p.svc.DecideApproval(server.DefaultTenant, runID, approvalID, approve, "crucible swe --approve")
		return err
	})
	err = p.svc.StreamAgentRun(ctx, server.DefaultTenant, req, nil, func(e service.Event) bool {
		if e.Agent != nil && e.Agent.Run != nil && runID == "" {
			runID = e.Agent.Run.ID
		}
		if e.Kind == service.EventApproval {
			// The run waits for the answer; the stream is not held
			// while a person reads the command.
			go events.event(ctx, string(e.Kind), e.Output, e.Agent)
			return true
		}
		events.event(ctx, string(e.Kind), e.Output, e.Agent)
		return true
	})
	events.close()
	if err != nil {
		return nil, sweServiceError(err)
	}
	return resultOfAgentRun(events.ended)
}

// sweServiceError is the exit of a run the service refused: bad input is
// a usage error naming the field, anything else the platform's.
func sweServiceError(err error) error {
	if sandbox.IsInputError(err) {
		return usageError(err)
	}
	return platformError(err)
}
