package linux

import (
	"context"
	"strconv"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Python runs under a code policy (sandbox.Request.Rules) are checked by
// the interpreter that runs them, before the program's first line: the
// kernel's check_policy, then its run_main. A warm sandbox has that
// interpreter already. A cold run with a policy takes the same path: its
// sandbox starts the kernel (without preloading) instead of
// `python3 /code/main.py`, and the program is handed to it as to a warm
// one, so no other process exists and the program runs with the script
// semantics of a warm run, which the warm-vs-cold conformance tests hold
// to a cold one's.

// checkedInSandbox reports whether x's code is checked by the kernel.
func (x *execution) checkedInSandbox() bool {
	return x.req.Rules != nil && x.req.Language == sandbox.Python
}

// bootForPolicy starts a stateless kernel in p, a cold sandbox, for x's
// run, as launchWarm does for the warm pool but with x's limits and
// environment.
func (x *execution) bootForPolicy(ctx context.Context, p *sandboxProc) error {
	k, err := x.rt.bootKernel(ctx, p, x.lim, x.req.Env, nil, statelessKernel, nil)
	if err != nil {
		return err
	}
	p.kernel = k
	return nil
}

// applyPolicyReply reads the kernel's answer to the policy check and
// applies it: the findings, and for a blocked program the status. The
// kernel sends it, then closes the channel (its only end in the sandbox:
// init keeps none), before the program's first line, so the program
// cannot write it and the read has ended, at the latest at the channel's
// end, once the program has; it is bounded all the same (BoundFindings).
func (x *execution) applyPolicyReply() {
	reply, ok := <-x.p.kernel.replies.replies
	if !ok {
		return
	}
	res := x.res
	res.Findings = sandbox.BoundFindings(reply.Findings)
	if reply.Status == "blocked" && x.stop.status == "" {
		res.Status, res.ExitCode, res.Signal = sandbox.StatusBlocked, -1, ""
		res.Reason = "the code policy (" + string(x.req.Rules.Mode) + ", " + x.req.Rules.Preset + ") blocked the program: " +
			strconv.Itoa(len(res.Findings)) + " finding(s); nothing ran"
		res.Error, res.Artifacts = nil, nil
	}
}
