package service

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/swe"
)

// A swe run (mode "swe") is an agent run whose agent is swe.Run: it
// goes through the same pipeline as a code agent's run (launchRun):
// the tenant's share of agent runs, the run's own sessions (recorded,
// linked to the run, their output redacted, the code policy at least
// AgentMode, no network), budgets within the server's maxima, approvals
// of each bash command, the events of its stream, cancellation, and the
// store (its info holds Mode and the outcome, SWE; its trace is the
// swe.Trace). Only its input (a repository instead of files) and its
// outcome (a diff and the tests before and after) differ.

// startSWERun starts tenant's swe run req, as StartAgentRun does. The
// payload (the request's body, which holds the repository) is held until
// the run ends: the task keeps the archive, which each verification
// unpacks again.
func (s *Service) startSWERun(ctx context.Context, tenant string, req api.AgentRunRequest, payload *Payload) (api.AgentRun, error) {
	run, gate, cfg, task, err := s.newSWERun(tenant, req)
	if err != nil {
		payload.Release()
		return api.AgentRun{}, err
	}
	return s.launchRun(ctx, run, payload.Release, func(ctx context.Context) api.AgentRun {
		res, err := swe.Run(ctx, cfg, task)
		s.logRunError(run, err)
		return run.finishSWE(res, err, gate.blockedReason())
	}, nil)
}

// newSWERun validates the swe run req and builds its run, not yet
// admitted, with swe.Run's Config and Task. Everything is checked before
// anything runs: the task, the repository's size and format, the tests,
// the budgets, the image and the limits.
func (s *Service) newSWERun(tenant string, req api.AgentRunRequest) (*agentRun, *sweGate, swe.Config, swe.Task, error) {
	model := s.cfg.Agents.Model
	if model == nil {
		return nil, nil, swe.Config{}, swe.Task{}, errNoModel
	}
	if strings.TrimSpace(req.Task) == "" {
		return nil, nil, swe.Config{}, swe.Task{}, invalid("task", "must state the task; it is empty")
	}
	task, err := sweTask(req)
	if err != nil {
		return nil, nil, swe.Config{}, task, err
	}
	cfg, err := s.sweConfig(req)
	if err != nil {
		return nil, nil, cfg, task, err
	}
	sreq, img, err := s.agentSession(req, cfg.CallTimeout)
	if err != nil {
		return nil, nil, cfg, task, err
	}
	run := s.newRun(tenant, req.Task, img.Name)
	run.info.Mode = api.ModeSWE
	red := s.cfg.Redactor
	cfg.ID, cfg.Model, cfg.Image, cfg.SessionLimits, cfg.OnEvent = run.id, model, img.Name, sreq.Limits, run.onSWEEvent
	// The sessions (the agent's and each verification's) hold no payload
	// of their own: the body is released when the run ends.
	cfg.Sandbox = uncheckedSessions{agentSandbox{rt: s.SessionRuntime(tenant, run.id), image: img.Name, run: run, opened: func() {}}}
	cfg.Redact = func(text string) string {
		text, _ = red.RedactString(text)
		return text
	}
	gate, err := s.newSWEGate(tenant, run, req.Approve)
	if err != nil {
		return nil, nil, cfg, task, err
	}
	cfg.Approve = gate.approve
	return run, gate, cfg, task, nil
}

// sweConfig turns req's budgets into swe.Run's Config: a zero budget is
// swe's default lowered to the server's maximum, a budget above the
// maximum is an input error naming its field.
func (s *Service) sweConfig(req api.AgentRunRequest) (swe.Config, error) {
	m := s.cfg.Agents.Maxima
	for _, b := range []struct {
		field  string
		v, max int64
		unit   string
	}{
		{"max_steps", int64(req.MaxSteps), int64(m.MaxSteps), " steps"},
		{"max_tokens", int64(req.MaxTokens), int64(m.MaxTokens), " tokens"},
		{"max_wall_ms", req.MaxWallMS, m.MaxWallMS, " ms"},
		{"cell_timeout_ms", req.CellTimeoutMS, m.CellTimeoutMS, " ms"},
	} {
		switch {
		case b.v < 0:
			return swe.Config{}, invalid(b.field, "must not be negative, got %d", b.v)
		case b.v > b.max:
			return swe.Config{}, invalid(b.field, "must be at most %d%s on this server, got %d", b.max, b.unit, b.v)
		}
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return swe.Config{
		MaxSteps:    or(req.MaxSteps, min(swe.DefaultMaxSteps, m.MaxSteps)),
		MaxTokens:   or(req.MaxTokens, min(swe.DefaultMaxTokens, m.MaxTokens)),
		MaxWallTime: ms(or(req.MaxWallMS, min(swe.DefaultMaxWallTime.Milliseconds(), m.MaxWallMS))),
		CallTimeout: ms(or(req.CellTimeoutMS, min(swe.DefaultCallTimeout.Milliseconds(), m.CellTimeoutMS))),
		TextMode:    req.TextMode,
	}, nil
}

// onSWEEvent is the swe agent's progress (swe.Config.OnEvent), as step
// events whose attempt is the model's turn. A command's output is not
// taken from it: the run's sessions stream it already (agentSession),
// redacted, within maxAgentStreamOutput.
func (run *agentRun) onSWEEvent(e swe.Event) {
	if e.Output != nil {
		return
	}
	msg, _ := run.s.cfg.Redactor.RedactString(e.Message)
	run.mu.Lock()
	run.attempt = e.Step
	run.mu.Unlock()
	run.publish(EventStep, api.AgentEvent{Step: &api.AgentStep{Kind: string(e.Kind), Attempt: e.Step, Message: msg}})
}

// finishSWE records how the swe run ended, res and err being swe.Run's,
// blocked why the code policy refused a command ("" if it did not): its
// status and reason, its outcome (kept even when the run was cancelled
// or failed after a result), and its trace, all redacted.
func (run *agentRun) finishSWE(res *swe.Result, err error, blocked string) api.AgentRun {
	var raw json.RawMessage
	if res != nil {
		run.mu.Lock()
		switch refusal := run.refusal; {
		case res.Status != swe.StatusDenied:
		case blocked != "":
			res.Reason = blocked
		case refusal != nil:
			res.Reason = denialReason(*refusal)
		}
		run.mu.Unlock()
		out, oerr := run.sweOutcome(res)
		if oerr != nil {
			run.s.log.Error("encode swe outcome", "agent_run", run.id, "err", oerr)
		}
		run.mu.Lock()
		run.info.SWE = out
		run.mu.Unlock()
		if raw, oerr = sweTrace(run.s, &res.Trace); oerr != nil {
			run.s.log.Error("encode swe trace", "agent_run", run.id, "err", oerr)
		}
	}
	return run.settle(raw, err, func(end *api.AgentRun) {
		end.Status = api.AgentRunStatus(res.Status)
		end.Reason, _ = run.s.cfg.Redactor.RedactString(res.Reason)
	})
}

// sweOutcome is res's outcome, every string in it redacted (the diff and
// the tests' output come from the sandbox, whose output the session
// redacted, but the diff is read from its files).
func (run *agentRun) sweOutcome(res *swe.Result) (*api.SWEOutcome, error) {
	b, err := json.Marshal(sweOutcomeOf(res))
	if err != nil {
		return nil, err
	}
	if b, err = redactJSON(run.s.cfg.Redactor, b); err != nil {
		return nil, err
	}
	var out api.SWEOutcome
	return &out, json.Unmarshal(b, &out)
}

// sweTrace returns t as JSON, every string in it redacted. A trace over
// the store's bound (maxStoredTrace) loses the requests of its model
// calls first (each repeats the conversation so far; the replies, tool
// calls and outputs stay), and then, if still over, its steps
// (boundedTrace): the same trace is kept in memory and in the store.
func sweTrace(s *Service, t *swe.Trace) (json.RawMessage, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	if len(b) > maxStoredTrace {
		lean := *t
		lean.Steps = make([]swe.Step, len(t.Steps))
		for i, st := range t.Steps {
			st.Request = nil
			lean.Steps[i] = st
		}
		if b, err = json.Marshal(lean); err != nil {
			return nil, err
		}
	}
	raw, err := redactJSON(s.cfg.Redactor, b)
	if err != nil {
		return nil, err
	}
	return boundedTrace(raw), nil
}

// sweOutcomeOf is the outcome a swe.Result carries, as the API has it.
func sweOutcomeOf(r *swe.Result) *api.SWEOutcome {
	return &api.SWEOutcome{Diff: r.Diff, Before: r.Before, After: r.After, FailToPass: r.FailToPass,
		PassToPass: r.PassToPass, Broken: r.Broken, TestEdits: r.TestEdits, Submitted: r.Submitted}
}
