package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// policyFlag is a --policy flag: off, warn or block.
type policyFlag struct{ mode sandbox.PolicyMode }

func (p *policyFlag) String() string { return string(p.mode) }
func (p *policyFlag) Type() string   { return "MODE" }
func (p *policyFlag) Set(s string) error {
	if m := sandbox.PolicyMode(s); m.Rank() >= 0 {
		p.mode = m
		return nil
	}
	return fmt.Errorf("want off, warn or block")
}

// policy is the request's policy; nil when the flag was not given.
func (p *policyFlag) policy() *sandbox.Policy {
	if p.mode == "" {
		return nil
	}
	return &sandbox.Policy{Mode: p.mode}
}

// addPolicyFlag adds --policy to fl, with usage.
func addPolicyFlag(fl *pflag.FlagSet, p *policyFlag, usage string) {
	fl.Var(p, "policy", usage)
}

// printFindings prints what the code policy found, one line each, through
// the display (a snippet is the program's text).
func printFindings(d *display, res sandbox.Result) {
	if res.Policy == nil || len(res.Findings) == 0 {
		return
	}
	for _, f := range res.Findings {
		d.say("crucible: policy %s (%s): %s", res.Policy.Mode, res.Policy.Preset, f)
	}
}
