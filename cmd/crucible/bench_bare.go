//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// bareCodeFlag is the flag that gives each language's interpreter its
// program on the command line.
var bareCodeFlag = map[sandbox.Language]string{sandbox.Python: "-c", sandbox.JavaScript: "-e", sandbox.Bash: "-c"}

// bareCall returns a call that runs req's program in a cold interpreter of
// its language (the one its sandboxes run) without a sandbox, with an
// empty environment, chrooted into root unless root is "" (the host's
// interpreter): the baseline of `crucible bench api`, what a caller
// without Crucible would run. The run must succeed
// and print want, if set.
func bareCall(root string, req sandbox.Request, want *string) func(context.Context) outcome {
	argv := []string{lang.For(req.Language).Interpreter, bareCodeFlag[req.Language]}
	return func(ctx context.Context) outcome {
		ctx, cancel := context.WithTimeout(ctx, benchRequestTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1], req.Code)
		cmd.Env = []string{}
		if root != "" {
			cmd.Dir = "/"
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		}
		return execOutcome(cmd, "bare "+argv[0], want)
	}
}

// execOutcome runs cmd, which must exit 0 and print want, if set; what
// names it in errors.
func execOutcome(cmd *exec.Cmd, what string, want *string) outcome {
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		return outcome{err: fmt.Errorf("%s exited %d: %.200s", what, exitErr.ExitCode(), exitErr.Stderr)}
	case err != nil:
		return outcome{err: fmt.Errorf("%s: %w", what, err)}
	}
	return resultOutcome(sandbox.Result{Status: sandbox.StatusOK, Stdout: out}, want)
}
