package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/swe"
)

// runSWERemote runs the task as an agent run of mode swe on --server,
// showing its events as the local run shows its progress, and asking on
// the terminal for each approval when --approve is set. The server's model
// runs it; the model flags do not apply.
func runSWERemote(ctx context.Context, f *sweFlags, task swe.Task, d *display) (*swe.Result, error) {
	opts := []client.Option{}
	key := f.serverKey
	if key == "" {
		key = os.Getenv("CRUCIBLE_API_KEY") // read here, never shown as the flag's default in --help
	}
	if key != "" {
		opts = append(opts, client.WithAPIKey(key))
	}
	c, err := client.New(f.server, opts...)
	if err != nil {
		return nil, usageError(fmt.Errorf("--server %q: %w", f.server, err))
	}
	repo := task.Repo
	req := api.AgentRunRequest{
		Mode: api.ModeSWE, Task: task.Prompt, Image: f.image, Approve: f.approve, TextMode: f.textMode,
		SWERequest: api.SWERequest{Repo: &repo, TestCommand: task.TestCommand, Tests: task.Tests},
	}
	// Budgets and limits not given are the server's defaults, within its
	// maxima, rather than this command's.
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
	run, err := c.StartAgentRun(ctx, req)
	if err != nil {
		return nil, remoteError(err)
	}
	d.say("swe: agent run %s on %s (its model %s)", run.ID, f.server, run.Model)
	progress := newSWEProgress(d)
	var ask func(context.Context, string) (bool, error)
	if f.approve {
		ask = approveOn(os.Stdin, os.Stderr)
	}
	var approveErr error
	ended, err := c.FollowAgentRun(ctx, run.ID, func(e client.AgentEvent) {
		switch {
		case e.Kind == "stdout" || e.Kind == "stderr":
			progress.event(swe.Event{Output: e.Output})
		case e.Step != nil:
			progress.event(swe.Event{Kind: swe.StepKind(e.Step.Kind), Step: e.Step.Attempt, Message: e.Step.Message})
		case e.Code != nil:
			progress.event(swe.Event{Kind: swe.StepTool, Step: e.Code.Attempt, Message: "runs " + e.Code.Code})
		case e.Approval != nil && ask != nil:
			progress.flush()
			ok, _ := ask(ctx, e.Approval.Code)
			if _, err := c.Approve(ctx, run.ID, e.Approval.ID, ok, "crucible swe --approve"); err != nil && approveErr == nil {
				approveErr = err
			}
		}
	})
	progress.close()
	if err != nil {
		return nil, remoteError(err)
	}
	if approveErr != nil {
		d.say("swe: an approval could not be sent: %v", approveErr)
	}
	return resultOfAgentRun(ended)
}

// resultOfAgentRun is the swe.Result an ended agent run of mode swe
// carries: its status, reason and outcome, and its trace when it is a
// swe.Trace.
func resultOfAgentRun(run *api.AgentRun) (*swe.Result, error) {
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

// remoteError is the exit of a request the server refused: bad input
// (4xx) is a usage error, anything else the platform's.
func remoteError(err error) error {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status >= 400 && apiErr.Status < 500 {
		return usageError(err)
	}
	return platformError(err)
}
