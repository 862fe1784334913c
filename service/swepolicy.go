package service

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// sweGate is a swe run's swe.Config.Approve: the code policy, then a
// person.
//
// The code policy applies to what the model writes. A swe run's cells
// are all the platform's own Python (package swe's wrappers, which run a
// command through bash, list, search or edit files, the model's part
// passed to them as data), so they run Unchecked (uncheckedSessions), as
// an analyst's helpers do: checked as Python they would be findings of
// the platform's code (subprocess, os), blocking every tool in block
// mode, and the model's command inside them would never be seen. The
// command itself is checked here instead, on the host, as bash, against
// the tenant's policy at least AgentMode, before it runs. In block mode a
// command with findings does not run and the run ends denied, its reason
// the policy's; in warn mode it runs and its findings are published as
// a step event. Then, when the request asked for approvals, a person
// decides (agentRun.approve).
type sweGate struct {
	run *agentRun
	pol codePolicy
	ask bool

	mu      sync.Mutex
	blocked string // why the policy refused a command; "" if it did not
}

// newSWEGate returns the gate of tenant's swe run, asking a person too
// if ask.
func (s *Service) newSWEGate(tenant string, run *agentRun, ask bool) (*sweGate, error) {
	pol, err := s.policyFor(tenant, nil, true)
	if err != nil {
		return nil, err
	}
	return &sweGate{run: run, pol: pol, ask: ask}, nil
}

// approve checks command and asks for approval (swe.Config.Approve).
func (g *sweGate) approve(ctx context.Context, command string) (bool, error) {
	if g.pol.on() {
		if found, _ := codecheck.CheckOnHost(sandbox.Bash, command, g.pol.preset, g.pol.mode); len(found) > 0 {
			msgs := make([]string, len(found))
			for i, f := range found {
				msgs[i] = f.Message
			}
			what := fmt.Sprintf("the code policy (%s, %s) found in the command: %s", g.pol.mode, g.pol.preset.Name, strings.Join(msgs, "; "))
			what, _ = g.run.s.cfg.Redactor.RedactString(what)
			g.run.publish(EventStep, api.AgentEvent{Step: &api.AgentStep{Kind: "tool", Attempt: g.run.currentAttempt(), Message: what}})
			if g.pol.mode == sandbox.PolicyBlock {
				g.mu.Lock()
				g.blocked = what + "; the command was blocked, nothing ran"
				g.mu.Unlock()
				return false, nil
			}
		}
	}
	if !g.ask {
		return true, nil
	}
	return g.run.approve(ctx, command)
}

// blockedReason is why the policy refused a command, or "".
func (g *sweGate) blockedReason() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.blocked
}

// uncheckedSessions opens the sessions of a swe run: rt's, whose cells
// run Unchecked (see sweGate: they are all the platform's own code; the
// model's commands are checked by the gate).
type uncheckedSessions struct{ rt sandbox.SessionRuntime }

func (u uncheckedSessions) NewSession(ctx context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	sess, err := u.rt.NewSession(ctx, req)
	if err != nil {
		return nil, err
	}
	return uncheckedSession{sess}, nil
}

// uncheckedSession is a session of a swe run.
type uncheckedSession struct{ sandbox.Session }

func (u uncheckedSession) Exec(ctx context.Context, cell sandbox.Cell) (sandbox.Result, error) {
	cell.Unchecked = true
	return u.Session.Exec(ctx, cell)
}
