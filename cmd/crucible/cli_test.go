package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"
)

// cli is one run of the crucible command (this test binary, see TestMain)
// with its output on pipes.
type cli struct {
	// stdin is the command's standard input; nil is /dev/null.
	stdin io.Reader
	// dir is the working directory; "" is the test's.
	dir string
}

// run runs the command with args to its end and returns its stdout, its
// stderr and its exit code.
func (c cli) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := c.command(args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// command returns the command, not started, its output not set.
func (c cli) command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	cmd.Stdin, cmd.Dir = c.stdin, c.dir
	return cmd
}
