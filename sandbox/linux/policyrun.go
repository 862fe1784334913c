package linux

import (
	"context"
	"strconv"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Every Python run is served by the interpreter of the kernel
// (python_kernel.py's run_main), never by `python3 /code/main.py`: under
// a code policy (sandbox.Request.Rules) the kernel checks the program
// before its first line, and on every path it gives the program the
// notebook's display() and returns the figures it left open
// (python_notebook.py). A warm sandbox or a zygote slot has that
// interpreter already. A cold run takes the same path: its sandbox
// starts the kernel (without preloading) instead of the program, and the
// program is handed to it as to a warm one, so no other process exists
// and the program runs with the script semantics of a warm run, which
// the warm-vs-cold conformance tests hold to a script's.

// runByKernel reports whether x's program is handed to the kernel.
func (x *execution) runByKernel() bool {
	return x.req.Language == sandbox.Python
}

// bootForRun starts a stateless kernel in p, a cold sandbox, for x's
// run, as launchWarm does for the warm pool but with x's limits,
// environment and input files: init places the files before the
// interpreter starts, as for `python3 /code/main.py`, so that a
// directory of them named in PYTHONPATH exists when the interpreter
// first looks at it (it remembers a directory it found missing).
func (x *execution) bootForRun(ctx context.Context, p *sandboxProc) error {
	if testHookBooting != nil {
		testHookBooting()
	}
	k, err := x.rt.bootKernel(ctx, p, x.lim, x.req.Env, x.req.Files, coldKernel, nil)
	if err != nil {
		return err
	}
	p.kernel = k
	x.filesPlaced = true
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
