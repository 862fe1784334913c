package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// BenchmarkCLIRunPrint1 runs `crucible run -c 'print(1)'`, the real binary
// built with the embedded init as scripts/setup.sh builds it, against
// `/usr/bin/python3 -c 'print(1)'` started bare, in separate phases of
// each sub-benchmark (package benchtest): the command b.N times (the
// benchmark's loop), then, once the server's pool is full, the bare
// interpreter b.N times. Every run must print 1 and exit 0. It reports
// the p50 and p99 of both and x_bare, the ratio of the medians (lower is
// better; the target is at most 2).
//
// "cold" is a run without a server (its socket missing): the command's own
// start, a sandbox built for the run, the run, the clean-up, back to back.
// "serve" runs with a `crucible serve --warm 2` listening on its local
// socket, which the command sends the run to, back to back: each command
// starts when the previous one exited, while the server resets the slot
// the previous run used. "serve-ready" waits, untimed, before each run
// until the server's zygote slot is ready: the latency of a person or an
// agent that runs a program now and then.
//
// Where the cold path spent its time once (print(1), 2 cores, ~43 ms in
// all against ~10 ms bare; timestamps in the binary): 8 ms from exec to
// main (Go package initialisation ~6.5 ms of it), 3 ms building the
// runtime (1.5-2 ms of it copying the embedded init to its memfd), 10 ms
// (0.1-20) moving init into the run's cgroup (the first cgroup v1
// migration of a process waits for an RCU grace period), 4 ms from init's
// start to the sandbox built, 10 ms of Python, 2 ms removing the cgroups.
func BenchmarkCLIRunPrint1(b *testing.B) {
	testenv.Root(b)
	bin := buildCrucible(b)
	b.Run("cold", func(b *testing.B) {
		benchCLI(b, bin, []string{"CRUCIBLE_SOCKET=" + filepath.Join(b.TempDir(), "none.sock")}, nil, false)
	})
	b.Run("serve", func(b *testing.B) {
		sock, base := startLocalServe(b, bin, "--warm", "2", "--prestart", "0")
		benchCLI(b, bin, []string{"CRUCIBLE_SOCKET=" + sock}, func() { waitPoolReady(b, base, "warm") }, false)
	})
	b.Run("serve-ready", func(b *testing.B) {
		sock, base := startLocalServe(b, bin, "--warm", "1", "--prestart", "0")
		benchCLI(b, bin, []string{"CRUCIBLE_SOCKET=" + sock}, func() { waitPoolReady(b, base, "warm") }, true)
	})
}

// benchCLI times the command, then the bare interpreter, b.N times each.
// ready, if set, waits until the server's pool is full: before each phase,
// and before each run of the command if idle is set.
func benchCLI(b *testing.B, bin string, env []string, ready func(), idle bool) {
	bare := bt.Print1
	cli := func() time.Duration {
		cmd := exec.Command(bin, "run", "-c", "print(1)")
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t := time.Now()
		out, err := cmd.Output()
		took := time.Since(t)
		if err != nil || string(out) != "1\n" {
			b.Fatalf("crucible run: %q, %v, stderr %q", out, err, stderr.Bytes())
		}
		return took
	}
	wait := func() {
		if ready != nil {
			ready()
		}
	}
	for range 3 { // untimed: the page cache, the pools
		bare.Run(b)
		wait()
		cli()
	}
	wait()
	var before func()
	if idle {
		before = wait
	}
	cliRuns := bt.Loop(b, before, cli)
	wait()
	bareRuns := bt.Times(b.N, nil, func() time.Duration { return bare.Run(b) })
	bt.Compare(b, cliRuns, "cli", bareRuns, "bare", "x_bare")
}

// buildCrucible builds the crucible command as scripts/setup.sh does, with
// the embedded init (which must have been built first), into a temporary
// directory.
func buildCrucible(tb testing.TB) string {
	tb.Helper()
	if _, err := os.Stat("../../sandbox/linux/initexe/crucible-init"); err != nil {
		testenv.Missing(tb, "the embedded init, sandbox/linux/initexe/crucible-init",
			"run scripts/setup.sh, which builds it, or: CGO_ENABLED=0 go build -o sandbox/linux/initexe/crucible-init ./cmd/crucible-init")
	}
	bin := filepath.Join(tb.TempDir(), "crucible")
	out, err := exec.Command("go", "build", "-tags", "crucible_initexe", "-o", bin, ".").CombinedOutput()
	if err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
