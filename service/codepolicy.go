package service

import (
	"context"
	"strconv"

	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// The static code policy (package codecheck: a seatbelt, never the
// boundary) is decided here, for every caller: the strictest mode of the
// server's (Config.Policy), the tenant's (TenantLimits.Policy), AgentMode
// for the code of agents, and the request's own. A request asking for a
// looser mode than the others gets the stricter one, not an error: the
// floor is the operator's, a caller need not know it, and the result says
// which policy applied (Result.Policy).

// AgentMode is the least policy mode of the code agents run: they feed
// the findings back to the model, which rewrites the code.
const AgentMode = sandbox.PolicyWarn

// codePolicy is the policy in force for one run or session.
type codePolicy struct {
	preset *codecheck.Preset
	mode   sandbox.PolicyMode
}

// on reports whether anything is checked.
func (p codePolicy) on() bool { return p.mode.Rank() > sandbox.PolicyOff.Rank() }

// applied is the policy a result reports; nil when off.
func (p codePolicy) applied() *sandbox.Policy {
	if !p.on() {
		return nil
	}
	return &sandbox.Policy{Mode: p.mode, Preset: p.preset.Name}
}

// rules are what the sandbox checks Python code against.
func (p codePolicy) rules() *sandbox.CodeRules {
	if !p.on() {
		return nil
	}
	return p.preset.Rules(p.mode)
}

// policyFor resolves the policy of tenant's request that asked for
// asked (nil: nothing), by an agent if agent is set.
func (s *Service) policyFor(tenant string, asked *sandbox.Policy, agent bool) (codePolicy, error) {
	mode := s.cfg.Policy.Mode.Stricter(s.cfg.Tenants[tenant].Policy)
	if s.cfg.Tenants[tenant].Policy == "" {
		mode = mode.Stricter(s.cfg.TenantDefaults.Policy)
	}
	if agent {
		mode = mode.Stricter(AgentMode)
	}
	presetName := s.cfg.Policy.Preset
	if asked != nil {
		if err := asked.Validate(); err != nil {
			return codePolicy{}, err
		}
		mode = mode.Stricter(asked.Mode)
		if asked.Preset != "" {
			presetName = asked.Preset
		}
	}
	preset, err := codecheck.Lookup("policy.preset", presetName)
	if err != nil {
		return codePolicy{}, err
	}
	return codePolicy{preset: preset, mode: mode}, nil
}

// runChecked runs req on rt under the policy: JavaScript and bash are
// checked here, on the host, and in block mode a program with findings
// is answered StatusBlocked without running; Python is checked in the
// sandbox (req.Rules). The result says which policy applied.
func runChecked(ctx context.Context, rt sandbox.Runtime, req sandbox.Request, pol codePolicy) (sandbox.Result, error) {
	if !pol.on() {
		return rt.Run(ctx, req)
	}
	found, onHost := codecheck.CheckOnHost(req.Language, req.Code, pol.preset, pol.mode)
	if onHost && len(found) > 0 && pol.mode == sandbox.PolicyBlock {
		lim := req.Limits.WithDefaults()
		return sandbox.Result{Status: sandbox.StatusBlocked, ExitCode: -1, Language: req.Language,
			Reason:   blockedReason(pol, len(found)),
			CodeHash: sandbox.CodeHash(req.Code), Limits: lim, Stdout: sandbox.Data{}, Stderr: sandbox.Data{},
			Policy: pol.applied(), Findings: found}, nil
	}
	// A remote runtime (package client) applies the policy by the field:
	// it gets the one in force here, not the one asked.
	req.Policy, req.Rules = pol.applied(), pol.rules()
	res, err := rt.Run(ctx, req)
	res.Policy = pol.applied()
	if onHost {
		res.Findings = found
	}
	return res, err
}

// blockedReason is the reason of a result the policy blocked.
func blockedReason(pol codePolicy, n int) string {
	return "the code policy (" + string(pol.mode) + ", " + pol.preset.Name + ") blocked the program: " +
		strconv.Itoa(n) + " finding(s); nothing ran"
}
