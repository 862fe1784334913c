package benchtest

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Bare is an interpreter command run without a sandbox: the baseline of
// the benchmarks, /usr/bin/python3 with an empty environment.
type Bare struct {
	Root string // chroot into this directory first; "" for the host's
	Code string // passed to python3 -c
	Want string // its expected stdout
}

// Print1 is `python3 -c 'print(1)'` on the host.
var Print1 = Bare{Code: "print(1)", Want: "1\n"}

// Run runs the command once and returns how long it took; it fails b
// unless the command succeeds with the expected stdout.
func (c Bare) Run(b *testing.B) time.Duration {
	took, err := c.Try()
	if err != nil {
		b.Fatal(err)
	}
	return took
}

// Try runs the command once and returns how long it took, or why it did
// not succeed with the expected stdout. It does not touch a testing.B,
// so that any goroutine may call it.
func (c Bare) Try() (time.Duration, error) {
	cmd := exec.Command("/usr/bin/python3", "-c", c.Code)
	cmd.Env = []string{}
	if c.Root != "" {
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: c.Root}
	}
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	if err != nil || string(out) != c.Want {
		return took, fmt.Errorf("bare python3 -c %q: stdout %q, %v, want %q", c.Code, out, err, c.Want)
	}
	return took, nil
}
