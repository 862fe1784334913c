package service

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/api"
)

// errNoModel refuses agent runs on a service without a model.
var errNoModel = &Error{Kind: KindNotConfigured, Field: "model",
	Rule:    `must be configured on the server: crucible serve --config with "model": {"provider", "model", "base_url", "api_key_env"}, or CRUCIBLE_MODEL and the provider's key in its environment`,
	Message: "this server runs no agents: it has no model configured"}

// AgentsEnabled reports, as a KindNotConfigured error naming "model",
// that the service runs no agents: it has no model. Nil when it does.
func (s *Service) AgentsEnabled() error {
	if s.cfg.Agents.Model == nil {
		return errNoModel
	}
	return nil
}

// StartAgentRun starts the agent of req.Mode (the code agent, or with
// mode "swe" the software-engineering agent, swe.go) on tenant's task
// req and returns the run at once (status running), while the agent goes
// on in its own session, until it ends or is cancelled (CancelAgentRun):
// the caller going away never ends it. Follow it with AgentRunEvents, read it with
// AgentRun. Its executions are the tenant's session cells, recorded and
// linked to the run's ID, their output redacted before the model sees it.
//
// The refusals: KindNotConfigured without a model; an input error naming
// the field for a bad task, file, image, limit or a budget above the
// server's maximum; KindBusy when the tenant's share or the server's
// maximum of agent runs is reached. payload, the reservation of the
// request's body (it holds the files), is released once the session
// holds the files, or at once on a refusal.
func (s *Service) StartAgentRun(ctx context.Context, tenant string, req api.AgentRunRequest, payload *Payload) (api.AgentRun, error) {
	if err := checkMode(req); err != nil {
		payload.Release()
		return api.AgentRun{}, err
	}
	if req.Mode == api.ModeSWE {
		return s.startSWERun(ctx, tenant, req, payload)
	}
	run, cfg, task, err := s.newAgentRun(tenant, req, payload)
	if err != nil {
		payload.Release()
		return api.AgentRun{}, err
	}
	return s.launch(ctx, run, payload.Release, func(ctx context.Context) (*agent.Trace, error) {
		return agent.Run(ctx, cfg, task)
	}, nil)
}

// launch admits run, within its tenant's share, and does work in its own
// goroutine, bound to no caller: it ends when work returns, or when the
// run is cancelled. It publishes the run's first event at once and, once
// work returned, calls ended (if set) with the run as it ended, before
// the run's result event. release is called once the run has ended, or
// at once on a refusal. It returns the run as it started.
func (s *Service) launch(ctx context.Context, run *agentRun, release func(), work func(context.Context) (*agent.Trace, error), ended func(api.AgentRun)) (api.AgentRun, error) {
	return s.launchRun(ctx, run, release, func(ctx context.Context) api.AgentRun {
		trace, err := work(ctx)
		s.logRunError(run, err)
		return run.finish(trace, err)
	}, ended)
}

// logRunError logs, redacted, why a run's agent failed, if it did.
func (s *Service) logRunError(run *agentRun, err error) {
	if err != nil {
		s.log.Warn("agent run failed", "agent_run", run.id, "err", redactErr(s.cfg.Redactor, err))
	}
}

// launchRun is launch for any agent: work does the run's work and
// returns the run as it ended, written to the store (its finish).
func (s *Service) launchRun(ctx context.Context, run *agentRun, release func(), work func(context.Context) api.AgentRun, ended func(api.AgentRun)) (api.AgentRun, error) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run.cancel = cancel
	run.persist = s.newPersister(run)
	// On record before it is admitted (a refused run is then forgotten;
	// an admitted one never shows as going on without its entry): its
	// approvals and events may be asked through any node.
	if err := s.recordHeld(ctx, run.id, run.tenant); err != nil {
		cancel()
		release()
		return api.AgentRun{}, err
	}
	if err := addShared(ctx, s, s.agents, ShareAgentRuns, run.tenant, run.id, run, s.LimitsFor(run.tenant).MaxAgentRuns); err != nil {
		s.forgetHeld(run.id)
		cancel()
		release()
		return api.AgentRun{}, err
	}
	started := run.snapshot(false)
	run.publish(EventAgentRun, api.AgentEvent{Run: &started})
	run.persist.start()
	go func() {
		defer close(run.done)
		end := work(runCtx)
		run.feed.dropOutput(run.keepOutput)
		cancel()
		release()
		// Ended before the result is published: a caller that has seen it
		// may start its next run at once, within its share, and finds
		// this one among the ended (and retained) runs.
		s.agents.end(run.id)
		if ended != nil {
			ended(end)
		}
		run.persist.last(end)
		run.publish(EventResult, api.AgentEvent{Run: &end})
		run.feed.end()
		s.forgetHeld(run.id) // after its last write: any node reads it from the store
	}()
	return started, nil
}

// newAgentRun validates req and builds its run, not yet admitted, and
// the agent's Config and Task.
func (s *Service) newAgentRun(tenant string, req api.AgentRunRequest, payload *Payload) (*agentRun, agent.Config, agent.Task, error) {
	model := s.cfg.Agents.Model
	if model == nil {
		return nil, agent.Config{}, agent.Task{}, errNoModel
	}
	if strings.TrimSpace(req.Task) == "" {
		return nil, agent.Config{}, agent.Task{}, invalid("task", "must state the task; it is empty")
	}
	cfg, err := s.agentConfig(req)
	if err != nil {
		return nil, cfg, agent.Task{}, err
	}
	sreq, img, err := s.agentSession(req, cfg.CellTimeout)
	if err != nil {
		return nil, cfg, agent.Task{}, err
	}
	run := s.newRun(tenant, req.Task, img.Name)
	cfg.ID, cfg.Model, cfg.SessionLimits, cfg.OnEvent = run.id, model, sreq.Limits, run.onEvent
	cfg.Sandbox = agentSandbox{rt: s.SessionRuntime(tenant, run.id), image: img.Name, run: run, opened: payload.Release}
	if req.Approve {
		cfg.Approve = run.approve
	}
	return run, cfg, agent.Task{Prompt: req.Task, Files: sreq.Files}, nil
}

// newRun returns a new agent run of tenant on task (kept redacted), in
// image, with the server's model; not yet admitted.
func (s *Service) newRun(tenant, task, image string) *agentRun {
	task, _ = s.cfg.Redactor.RedactString(task)
	run := &agentRun{s: s, id: agent.NewRunID(), tenant: tenant, feed: newFeed(tenant), done: make(chan struct{}),
		timeout: s.cfg.Agents.ApprovalTimeout,
		info:    api.AgentRun{Status: api.AgentRunning, Task: task, Image: image, Model: s.cfg.Agents.Model.Name(), CreatedAt: storedTime()}}
	run.info.ID = run.id
	return run
}

// AgentRun returns tenant's agent run id, with its trace once it ended:
// as the service holds it, or else as the store does (a run ended beyond
// the retention, or before a restart); KindNotFound when neither holds
// it (or it is another tenant's).
func (s *Service) AgentRun(tenant, id string) (api.AgentRun, error) {
	run, err := s.agents.get(tenant, id)
	if err != nil {
		rec, err := s.storedAgentRun(context.Background(), tenant, id, err)
		if err != nil {
			return api.AgentRun{}, err
		}
		return rec.Run, nil
	}
	return run.snapshot(true), nil
}

// CancelAgentRun stops tenant's agent run id, if it is going on, and
// waits until it has ended (or ctx ends); it returns the run as it
// ended, status cancelled. An ended run is returned as it is.
func (s *Service) CancelAgentRun(ctx context.Context, tenant, id string) (api.AgentRun, error) {
	run, err := s.agents.get(tenant, id)
	if err != nil {
		rec, err := s.storedAgentRun(ctx, tenant, id, err)
		if err != nil {
			return api.AgentRun{}, err
		}
		return rec.Run, nil
	}
	run.stop("cancelled by its caller")
	select {
	case <-run.done:
	case <-ctx.Done():
		return api.AgentRun{}, ctx.Err()
	}
	return run.snapshot(true), nil
}

// DecideApproval decides approval approvalID of tenant's agent run
// runID: approve runs the program, a refusal ends the run denied.
// KindNotFound for an unknown run or approval (Field names which),
// KindConflict for an approval already decided, or of a run that has
// ended (such as one a restart interrupted while it waited).
func (s *Service) DecideApproval(tenant, runID, approvalID string, approve bool, reason string) (api.AgentDecision, error) {
	run, err := s.agents.get(tenant, runID)
	if err != nil {
		rec, err := s.storedAgentRun(context.Background(), tenant, runID, err)
		if err != nil {
			return api.AgentDecision{}, err
		}
		return api.AgentDecision{}, decideStored(rec, approvalID)
	}
	return run.decide(approvalID, approve, reason)
}

// AgentRunEvents returns the events of tenant's agent run id after
// position after (an Event.ID; 0 for all of them), until the run ends or
// ctx ends, as Events does for a run: IDs are positions (1 for the first
// event, one more for each event but output, the bytes of an output
// event), and a position beyond the last event so far is an input error
// naming "after". Once the run has ended its output events are no longer
// held: its stream is replayed without them (its trace holds each
// execution's output). A run the service no longer holds is replayed
// from the store, with the same IDs, as far as the store holds its
// events (agentpersist.go bounds them). It returns a nil sequence when
// the run ended and nothing comes after position after.
func (s *Service) AgentRunEvents(ctx context.Context, tenant, id string, after int64) (iter.Seq[Event], error) {
	if after < 0 {
		return nil, invalid("after", "must be a non-negative integer, got %d", after)
	}
	run, err := s.agents.get(tenant, id)
	if err != nil {
		rec, err := s.storedAgentRun(ctx, tenant, id, err)
		if err != nil {
			return nil, err
		}
		events, err := s.storedEvents(ctx, rec, after)
		if err != nil || events == nil {
			return nil, err
		}
		return slices.Values(events), nil
	}
	return run.events(ctx, after)
}

// events returns the run's events after position after, as
// AgentRunEvents does.
func (run *agentRun) events(ctx context.Context, after int64) (iter.Seq[Event], error) {
	if after < 0 {
		return nil, invalid("after", "must be a non-negative integer, got %d", after)
	}
	f := run.feed
	switch last, done := f.position(); {
	case done && after >= last:
		return nil, nil
	case after > last:
		return nil, invalid("after", "is beyond the last event of agent run %s so far (%d): it must be the id of an event of its stream", run.id, last)
	}
	return func(yield func(Event) bool) { f.follow(ctx, after, yield) }, nil
}

// StreamAgentRun starts tenant's agent run req as StartAgentRun does and
// passes its events to emit until it ends. The run is bound to the
// caller: when ctx ends or emit returns false before the run's end, it
// is cancelled.
func (s *Service) StreamAgentRun(ctx context.Context, tenant string, req api.AgentRunRequest, payload *Payload, emit func(Event) bool) error {
	started, err := s.StartAgentRun(ctx, tenant, req, payload)
	if err != nil {
		return err
	}
	run, err := s.agents.get(tenant, started.ID)
	if err != nil {
		return fmt.Errorf("service: agent run %s vanished: %w", started.ID, err)
	}
	run.followBound(ctx, emit)
	return nil
}

// followBound passes the run's events to emit until it ends, and
// cancels it when ctx ends or emit returns false before its end.
func (run *agentRun) followBound(ctx context.Context, emit func(Event) bool) {
	ended := false
	run.feed.follow(ctx, 0, func(e Event) bool {
		ended = e.Kind == EventResult
		return emit(e)
	})
	if !ended {
		run.stop("cancelled: its stream's client went away")
	}
}
