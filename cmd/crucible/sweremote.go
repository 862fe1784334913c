package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/swe"
)

// runSWERemote runs the task as an agent run of mode swe on --server,
// showing its events as a local run's, and asking on the terminal for
// each approval when --approve is set. The server's model runs it; the
// model flags do not apply.
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
	run, err := c.StartAgentRun(ctx, f.request(task, f.image))
	if err != nil {
		return nil, remoteError(err)
	}
	d.say("swe: agent run %s on %s (its model %s)", run.ID, f.server, run.Model)
	events := f.newSWEEvents(d, func(approvalID string, approve bool) error {
		_, err := c.Approve(ctx, run.ID, approvalID, approve, "crucible swe --approve")
		return err
	})
	ended, err := c.FollowAgentRun(ctx, run.ID, func(e client.AgentEvent) {
		events.event(ctx, e.Kind, e.Output, &e.AgentEvent)
	})
	events.close()
	if err != nil {
		return nil, remoteError(err)
	}
	return resultOfAgentRun(ended)
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
