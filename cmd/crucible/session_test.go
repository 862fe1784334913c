package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// sessionWait bounds every wait of these tests. It only decides when a
// test gives up and fails: nothing asserts how long anything took.
const sessionWait = time.Minute

// sessionOutput collects what a stream of the crucible command gives, for
// a test to wait until a piece of it has come.
type sessionOutput struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{} // signalled after each read
	done chan struct{} // closed at the end of the stream
}

// collect reads r until it ends (EOF, or EIO from a terminal whose other
// side closed) in the background.
func collect(r io.Reader) *sessionOutput {
	o := &sessionOutput{more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			o.mu.Lock()
			o.buf.Write(b[:n])
			o.mu.Unlock()
			select {
			case o.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return o
}

// String returns everything read so far.
func (o *sessionOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output holds want, and fails t if it never
// does: the stream ends first, or sessionWait passes.
func (o *sessionOutput) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(sessionWait)
	for !strings.Contains(o.String(), want) {
		select {
		case <-o.more:
		case <-o.done:
			if !strings.Contains(o.String(), want) {
				t.Fatalf("the output ended without %q: %q", want, o.String())
			}
		case <-deadline:
			t.Fatalf("no %q in the output after %s: %q", want, sessionWait, o.String())
		}
	}
}

// waitEnd waits until the stream ends, and fails t if it does not.
func (o *sessionOutput) waitEnd(t *testing.T) {
	t.Helper()
	select {
	case <-o.done:
	case <-time.After(sessionWait):
		t.Fatalf("the output did not end after %s: %q", sessionWait, o.String())
	}
}

// crucibleCommand is the crucible command run by this test binary (see
// TestMain).
func crucibleCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1", "NO_COLOR=") // an empty NO_COLOR is unset
	return cmd
}

// ptySession is `crucible session` on a pseudo-terminal: what the test
// writes is typed, and screen is what the terminal shows.
type ptySession struct {
	cmd    *exec.Cmd
	tty    *os.File // the terminal's other side, where the test types
	screen *sessionOutput
}

// startPTYSession starts `crucible session` with stdin, stdout and
// stderr on a new pseudo-terminal.
func startPTYSession(t *testing.T, args ...string) *ptySession {
	t.Helper()
	cmd := crucibleCommand(append([]string{"session"}, args...)...)
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	s := &ptySession{cmd: cmd, tty: ptmx, screen: collect(ptmx)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		ptmx.Close()
	})
	return s
}

// typeLine types line and Enter.
func (s *ptySession) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.tty, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// exitCode waits for the command to end and returns its exit code.
func (s *ptySession) exitCode(t *testing.T) int {
	t.Helper()
	s.screen.waitEnd(t)
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return s.cmd.ProcessState.ExitCode()
}

// TestSessionTypedLines types cells at a real terminal, one at a time,
// each after the previous one's result appeared: every one must run, the
// first included, and each in turn.
func TestSessionTypedLines(t *testing.T) {
	testenv.Root(t)
	s := startPTYSession(t, "--out", t.TempDir())
	s.screen.waitFor(t, ">>> ")
	for i := 1; i <= 6; i++ {
		// The echo of the line shows "got {i*7}", the result "got 7".
		s.typeLine(t, fmt.Sprintf(`print(f"got {%d*7}")`, i))
		s.screen.waitFor(t, fmt.Sprintf("got %d\r\n", i*7))
	}
	s.typeLine(t, "def f(x):")
	s.typeLine(t, "    return x + 1")
	s.typeLine(t, "")
	s.typeLine(t, "f(41)")
	s.screen.waitFor(t, "Out[8]: 42")
	s.typeLine(t, ":quit")
	if code := s.exitCode(t); code != 0 {
		t.Errorf("exit code %d after :quit, want 0: %q", code, s.screen)
	}
}

// TestSessionExitCodeTyped proves an interactive session exits 0 when the
// person ends it, whatever the typed cells raised, and ends at once with
// the code of the cell that ended the session when one does.
func TestSessionExitCodeTyped(t *testing.T) {
	testenv.Root(t)
	cases := []struct {
		name  string
		lines []string // typed, each after the previous one's result
		after []string // what each line's result shows
		want  int
	}{
		{"raised, then :quit", []string{"1/0", ":quit"}, []string{"ZeroDivisionError", ""}, 0},
		{"raised, then Ctrl-D", []string{"1/0", "\x04"}, []string{"ZeroDivisionError", ""}, 0},
		{"the interpreter exits", []string{"import os; os._exit(3)"}, []string{""}, 3},
		{"the interpreter is killed", []string{"import os; os.kill(os.getpid(), 9)"}, []string{""}, 128 + 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startPTYSession(t, "--out", t.TempDir())
			s.screen.waitFor(t, ">>> ")
			for i, line := range c.lines {
				if line == "\x04" {
					_, _ = io.WriteString(s.tty, line)
				} else {
					s.typeLine(t, line)
				}
				if c.after[i] != "" {
					s.screen.waitFor(t, c.after[i])
				}
			}
			if code := s.exitCode(t); code != c.want {
				t.Errorf("exit code %d, want %d: %q", code, c.want, s.screen)
			}
		})
	}
}

// TestSessionExitCodePiped proves a piped session exits non-zero when a
// cell failed (the first failure's code) or the session ended (the code
// of the cell that ended it), and 0 when every cell ran.
func TestSessionExitCodePiped(t *testing.T) {
	testenv.Root(t)
	cases := []struct {
		name  string
		args  []string
		cells string
		want  int
		shown string // in the output
		never string // never in the output
	}{
		{"every cell ran", nil, "print('one')\n# %%\nx = 2\n# %%\n:ls\n# %%\nx * 21\n", 0, "Out[3]: 42", ""},
		{"a cell raised", nil, "1/0\n", 1, "ZeroDivisionError", ""},
		{"the first failure counts", []string{"--timeout", "1s"}, "1/0\n# %%\nimport time; time.sleep(30)\n# %%\nprint('after')\n", 1, "after", ""},
		{"a timeout", []string{"--timeout", "1s"}, "import time; time.sleep(30)\n# %%\nprint('kept')\n", exitTimeout, "kept", ""},
		{"the interpreter exits", nil, "1/0\n# %%\nimport os; os._exit(3)\n# %%\nprint('never')\n", 3, "exited with code 3", "never"},
		{"the interpreter exits 0", nil, "import os; os._exit(0)\n# %%\nprint('never')\n", 1, "exited with code 0", "never"},
		{"the interpreter is killed", nil, "import os; os.kill(os.getpid(), 9)\n", 128 + 9, "SIGKILL", ""},
		{"the memory limit", []string{"--memory", "64MiB"}, "x = 1\n# %%\nb = bytearray(512 << 20)\n# %%\nprint('after:', 'x' in globals())\n",
			exitMemoryLimit, "every variable and import was lost", ""},
		{"the memory limit, then the next cell", []string{"--memory", "64MiB"}, "x = 1\n# %%\nb = bytearray(512 << 20)\n# %%\nprint('after:', 'x' in globals())\n",
			exitMemoryLimit, "after: False", ""},
		{"an invalid cell", nil, "print('\x00')\n# %%\nprint('next')\n", exitUsage, "next", ""},
		{"an unknown command", nil, ":nope\n# %%\nprint('next')\n", exitUsage, "next", ""},
		{"a command that failed", nil, ":download missing.txt\n", 1, "missing.txt", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := crucibleCommand(append([]string{"session", "--out", t.TempDir()}, c.args...)...)
			cmd.Stdin = strings.NewReader(c.cells)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if code := cmd.ProcessState.ExitCode(); code != c.want {
				t.Errorf("exit code %d, want %d: %s", code, c.want, out)
			}
			if !strings.Contains(string(out), c.shown) {
				t.Errorf("the output lacks %q: %s", c.shown, out)
			}
			if c.never != "" && strings.Contains(string(out), c.never) {
				t.Errorf("the output holds %q: %s", c.never, out)
			}
		})
	}
}

// streamingCell makes the file "waiting", prints on stdout (with an
// escape sequence, to be shown inert on a terminal) and on stderr, then
// waits until the test creates the file "go" beside "waiting", and then
// prints again and raises; the next cell leaves a value for Out. It is a
// format: %[1]s is a token for the files' names, and "# %%%%" splits.
const streamingCell = `import os, sys, time
open("waiting-%[1]s", "w").close()
print("first \x1b[31m", flush=True)
print("warning", file=sys.stderr, flush=True)
while not os.path.exists("go-%[1]s"):
    time.sleep(0.02)
print("second")
1/0
# %%%%
6 * 7
`

// TestSessionStreamsOutput proves a cell's output is shown while it runs,
// stdout and stderr apart, inert on a terminal, and followed by the
// traceback and the next cell's value.
func TestSessionStreamsOutput(t *testing.T) {
	testenv.Root(t)
	token := fmt.Sprintf("%d", time.Now().UnixNano())
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stderrR.Close()
	cmd := crucibleCommand("session", "--out", t.TempDir(), "--timeout", "10m")
	cmd.Stdin = strings.NewReader(fmt.Sprintf(streamingCell, token))
	cmd.Stdout, cmd.Stderr = tty, stderrW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	tty.Close()
	stderrW.Close()
	stdout, stderr := collect(ptmx), collect(stderrR)

	stdout.waitFor(t, `first \x1b[31m`)
	stderr.waitFor(t, "warning")
	if strings.Contains(stdout.String(), "second") {
		t.Fatalf("the cell went on before the test let it: %q", stdout)
	}
	goFile(t, "waiting-"+token, "go-"+token)
	stdout.waitFor(t, "Out[2]: 42")
	stdout.waitEnd(t)
	stderr.waitEnd(t)
	_ = cmd.Wait()

	if got := stdout.String(); !strings.Contains(got, "first \\x1b[31m\r\nsecond\r\nOut[2]: 42") {
		t.Errorf("stdout: %q", got)
	}
	if strings.Contains(stdout.String(), "warning") || strings.Contains(stderr.String(), "first") {
		t.Errorf("stdout and stderr mixed: stdout %q, stderr %q", stdout, stderr)
	}
	if got := stderr.String(); !strings.Contains(got, "warning\n") || strings.Index(got, "ZeroDivisionError") < strings.Index(got, "warning") {
		t.Errorf("stderr: %q, want the warning, then the traceback", got)
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code %d, want 1 (a cell raised)", code)
	}
}

// goFile creates the file named next beside the file named mark in the
// working directory of the process (a sandboxed cell) that created mark.
func goFile(t *testing.T, mark, next string) {
	t.Helper()
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, cwd := range cwds {
		if _, err := os.Stat(filepath.Join(cwd, mark)); err == nil {
			if err := os.WriteFile(filepath.Join(cwd, next), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no process has %s in its working directory", mark)
}

func TestCellExitCode(t *testing.T) {
	cases := []struct {
		res  sandbox.Result
		want int
	}{
		{sandbox.Result{Status: sandbox.StatusOK}, 0},
		{sandbox.Result{Status: sandbox.StatusError, ExitCode: 1}, 1},                        // an exception
		{sandbox.Result{Status: sandbox.StatusError, ExitCode: 3}, 3},                        // os._exit(3)
		{sandbox.Result{Status: sandbox.StatusError, ExitCode: 0}, 1},                        // os._exit(0)
		{sandbox.Result{Status: sandbox.StatusTimeout, ExitCode: 1}, exitTimeout},            // interrupted, kept
		{sandbox.Result{Status: sandbox.StatusTimeout, Signal: "SIGKILL"}, exitTimeout},      // did not yield
		{sandbox.Result{Status: sandbox.StatusKilled, ExitCode: -1, Signal: "SIGKILL"}, 137}, // os.kill(pid, 9)
		{sandbox.Result{Status: sandbox.StatusMemoryLimit}, exitMemoryLimit},
	}
	for _, c := range cases {
		if got := cellExitCode(c.res); got != c.want {
			t.Errorf("%s exit %d %s: got %d, want %d", c.res.Status, c.res.ExitCode, c.res.Signal, got, c.want)
		}
	}
}
