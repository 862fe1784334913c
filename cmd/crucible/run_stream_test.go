package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// waitForGo is a program that prints "first" to the stream named by
// $STREAM, then waits for SIGUSR1 (blocked first, so a signal sent early
// is kept), then prints "second" there and exits 0. It never flushes:
// Python must write each print at once (PYTHONUNBUFFERED) for the line to
// show while the program waits.
const waitForGo = `import os, signal, sys
out = getattr(sys, os.environ["STREAM"])
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
print("first", file=out)
signal.sigwait({signal.SIGUSR1})
print("second", file=out)
`

// TestRunStreamsOutput checks that `crucible run` shows each stream's
// output while the program runs, on its own stream: the test reads the
// first line from the CLI's pipe before it lets the program go on. Before
// output was streamed, the line came only when --timeout killed the
// program, which then never printed its second line.
func TestRunStreamsOutput(t *testing.T) {
	testenv.Root(t)
	for _, stream := range []string{"stdout", "stderr"} {
		t.Run(stream, func(t *testing.T) {
			token := rand.Text()
			cmd := cli{}.command("run", "--timeout", "30s", "--env", "STREAM="+stream, "--env", "TOKEN="+token, "-c", waitForGo)
			var other bytes.Buffer
			live, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = &other
			if stream == "stderr" {
				cmd.Stdout = &other
				cmd.Stderr = nil
				if live, err = cmd.StderrPipe(); err != nil {
					t.Fatal(err)
				}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			lines := bufio.NewReader(live)
			if line := readLine(t, lines); line != "first\n" {
				t.Fatalf("first line on %s: %q, want %q", stream, line, "first\n")
			}
			// The program waits: it is still running.
			if err := signalProgram(token, syscall.SIGUSR1); err != nil {
				t.Fatalf("the program no longer runs after its first line was shown: %v", err)
			}
			rest, err := io.ReadAll(lines)
			if err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit code %d, want 0; %s: %q, the other: %q", code, stream, rest, other.String())
			}
			text := "first\n" + string(rest)
			if stream == "stdout" {
				if text != "first\nsecond\n" {
					t.Errorf("stdout %q, want the program's exactly", text)
				}
				if !strings.HasPrefix(other.String(), "crucible: ok (exit 0)") {
					t.Errorf("stderr %q, want only the summary", other.String())
				}
				return
			}
			if !strings.HasPrefix(text, "first\nsecond\ncrucible: ok (exit 0)") {
				t.Errorf("stderr %q, want the program's, then the summary", text)
			}
			if other.Len() != 0 {
				t.Errorf("stdout %q, want nothing", other.String())
			}
		})
	}
}

// readLine reads a line from r; it fails t if none comes within a minute,
// a bound that only keeps a broken test from hanging.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		line, _ := r.ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		return line
	case <-time.After(time.Minute):
		t.Fatal("no line within a minute")
		return ""
	}
}

// signalProgram sends sig to the sandboxed Python process whose
// environment holds TOKEN=token.
func signalProgram(token string, sig syscall.Signal) error {
	environs, err := filepath.Glob("/proc/[0-9]*/environ")
	if err != nil {
		return err
	}
	for _, p := range environs {
		env, err := os.ReadFile(p)
		comm, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "comm"))
		if err != nil || string(comm) != "python3\n" || !slices.ContainsFunc(bytes.Split(env, []byte{0}), func(v []byte) bool { return string(v) == "TOKEN="+token }) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(p, "/proc/%d/environ", &pid); err != nil {
			return err
		}
		return syscall.Kill(pid, sig)
	}
	return fmt.Errorf("no process has TOKEN=%s", token)
}

// TestRunStreamedOutputIsTheResults checks that what `crucible run` streams
// is what the Result holds when the output limit cuts it: the same
// program's stdout, streamed, equals its --json Result's. (One stream only:
// how the limit falls between two streams depends on their timing.)
func TestRunStreamedOutputIsTheResults(t *testing.T) {
	testenv.Root(t)
	const prog = `for i in range(300): print("out", i, "x" * 40)`
	args := []string{"run", "--output", "8KiB", "-c", prog}
	stdout, stderr, code := cli{}.run(t, args...)
	asJSON, _, jsonCode := cli{}.run(t, append(args, "--json")...)
	var res sandbox.Result
	if err := json.Unmarshal([]byte(asJSON), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOutputLimit || code != jsonCode || len(res.Stdout) != 8<<10 {
		t.Fatalf("status %s, %d bytes, exit codes %d and %d: want the output limit, 8 KiB, the same code", res.Status, len(res.Stdout), code, jsonCode)
	}
	if stdout != string(res.Stdout) {
		t.Errorf("streamed stdout (%d bytes) is not the Result's (%d bytes)", len(stdout), len(res.Stdout))
	}
	if !strings.HasPrefix(stderr, "crucible: output_limit") {
		t.Errorf("stderr %q, want the summary alone", stderr)
	}
}
