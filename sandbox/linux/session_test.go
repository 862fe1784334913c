package linux_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/sandbox/sandboxtest"
)

// The tests in this file drive sessions of the native runtime: a live
// Python kernel in its own sandbox, one cell at a time. Each checks a
// promise of sandbox.Session, from the Result a cell returns and, where
// the promise is about the host (processes killed, cgroups removed, host
// files untouched), by looking at the host from outside the sandbox.

// sandboxed reports whether uid is one sandboxes run as by default.
func sandboxed(uid int) bool {
	return uid >= linux.DefaultUIDBase && uid < linux.DefaultUIDBase+linux.DefaultUIDCount
}

// callTimeout bounds every call the tests make into a session, so that a
// hang fails its test instead of the whole test binary.
const callTimeout = 60 * time.Second

// newRuntime returns a native runtime with opts, closed when tb ends.
func newRuntime(tb testing.TB, opts linux.Options) *linux.Runtime {
	tb.Helper()
	testenv.Root(tb)
	rt, err := linux.New(opts)
	if err != nil {
		tb.Fatalf("linux.New: %v", err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

// newSession opens a Python session with lim on rt, closed when tb ends.
func newSession(tb testing.TB, rt *linux.Runtime, lim sandbox.Limits) sandbox.Session {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python, Limits: lim})
	if err != nil {
		tb.Fatalf("NewSession: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// execCell runs cell in s and fails tb if Exec returns an error.
func execCell(tb testing.TB, s sandbox.Session, cell sandbox.Cell) sandbox.Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := s.Exec(ctx, cell)
	if err != nil {
		tb.Fatalf("Exec(%q): %v", cell.Code, err)
	}
	return res
}

// execCode runs code as a cell with the session's own limits.
func execCode(tb testing.TB, s sandbox.Session, code string) sandbox.Result {
	tb.Helper()
	return execCell(tb, s, sandbox.Cell{Code: code})
}

// describe shows a Result in a failure message.
func describe(res sandbox.Result) string {
	e := ""
	if res.Error != nil {
		e = fmt.Sprintf(" error=%s:%d:%d %q", res.Error.Type, res.Error.Line, res.Error.Column, res.Error.Message)
	}
	return fmt.Sprintf("status=%s reason=%q exit=%d signal=%q value=%q%s stdout=%q stderr=%q",
		res.Status, res.Reason, res.ExitCode, res.Signal, res.Value, e, clipped(res.Stdout), clipped(res.Stderr))
}

func clipped(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

// wantOK fails tb unless res is a cell that ran to its end.
func wantOK(tb testing.TB, res sandbox.Result) {
	tb.Helper()
	if res.Status != sandbox.StatusOK {
		tb.Fatalf("want status ok, got %s", describe(res))
	}
}

// uniqueToken returns a fresh marker to recognise what a test started.
func uniqueToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "crtok" + hex.EncodeToString(b)
}

// procsWith returns the host processes whose command line contains token,
// running as a sandbox's uid if onlySandboxed (else as any user).
func procsWith(token string, onlySandboxed bool) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(token)) {
			continue
		}
		if onlySandboxed && !sandboxed(procUID(pid)) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// procUID returns the real uid of pid, or -1 when it is gone.
func procUID(pid int) int {
	for _, line := range procStatus(pid) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid, _ := strconv.Atoi(f[1])
			return uid
		}
	}
	return -1
}

// procStatus returns the lines of /proc/<pid>/status.
func procStatus(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	return strings.Split(string(b), "\n")
}

// awaitProcs waits up to limit until the processes carrying token are
// running (running true) or gone (false), and returns those there at the
// end. A child that Popen has just forked carries its new command line
// only once its exec is done, so a single look can miss it.
func awaitProcs(token string, onlySandboxed bool, running bool, limit time.Duration) []int {
	deadline := time.Now().Add(limit)
	for {
		found := procsWith(token, onlySandboxed)
		if (len(found) > 0) == running || time.Now().After(deadline) {
			return found
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sighting is a process a spotter saw: its pid and its /proc/<pid>/cgroup.
type sighting struct {
	pid     int
	cgroups string
}

// spotter watches the host, until stopped, for a process carrying a
// token: the positive control that a later "gone" check is not vacuous.
type spotter struct {
	stop chan struct{}
	seen chan sighting
}

// spot starts watching for a process (of a sandbox's uid if onlySandboxed)
// whose command line holds token.
func spot(token string, onlySandboxed bool) *spotter {
	sp := &spotter{stop: make(chan struct{}), seen: make(chan sighting, 1)}
	go func() {
		defer close(sp.seen)
		for {
			if pids := procsWith(token, onlySandboxed); len(pids) > 0 {
				cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids[0]))
				sp.seen <- sighting{pids[0], string(cg)}
				return
			}
			select {
			case <-sp.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return sp
}

// result stops watching and returns the first process seen, if any.
func (sp *spotter) result() (sighting, bool) {
	close(sp.stop)
	s, ok := <-sp.seen
	return s, ok
}

// ownCgroups lists the cgroups the runtimes of this test process created:
// /sys/fs/cgroup/<controller>/crucible/<pid>.<n> (v1) or
// /sys/fs/cgroup/crucible/<pid>.<n> (v2).
func ownCgroups() []string {
	prefix := strconv.Itoa(os.Getpid()) + "."
	var dirs []string
	for _, g := range []string{"/sys/fs/cgroup/*/crucible/" + prefix + "*", "/sys/fs/cgroup/crucible/" + prefix + "*"} {
		m, _ := filepath.Glob(g)
		dirs = append(dirs, m...)
	}
	return dirs
}

// imageOptions runs sandboxes in img, with its environment and /tmp seed.
func imageOptions(img *image.Image) linux.Options {
	return linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest}
}

// TestSessionStatePersists proves a session is one interpreter and one
// working directory: the variables, imports, functions and files one cell
// makes are there for the next.
func TestSessionStatePersists(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	for _, step := range []struct{ name, code, value string }{
		{"variable", "x = 41", ""},
		{"import", "import math", ""},
		{"function", "def inc(v):\n    return v + 1", ""},
		{"file", "with open('state.txt', 'w') as f:\n    f.write('kept')", ""},
		{"all of them", "inc(x), math.sqrt(16), open('state.txt').read()", "(42, 4.0, 'kept')"},
		{"rebinding", "x = inc(x)\nx", "42"},
	} {
		t.Run(step.name, func(t *testing.T) {
			res := execCode(t, s, step.code)
			wantOK(t, res)
			if res.Value != step.value {
				t.Errorf("value = %q, want %q", res.Value, step.value)
			}
		})
	}
}

// TestSessionCellResults proves each cell's Result: the repr of the last
// expression (none for None or a statement), output and value together,
// and errors located on the cell's own lines; the session keeps working
// after a cell failed.
func TestSessionCellResults(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	for _, tc := range []struct {
		name, code    string
		status        sandbox.Status
		value, stdout string
		errType       string
		errLine       int
	}{
		{name: "None has no value", code: "None", status: sandbox.StatusOK},
		{name: "a statement has no value", code: "y = 2", status: sandbox.StatusOK},
		{name: "last expression repr", code: "'a' + 'b'", status: sandbox.StatusOK, value: "'ab'"},
		{name: "print and value", code: "print('out')\n[y, None]", status: sandbox.StatusOK, value: "[2, None]", stdout: "out\n"},
		{name: "syntax error", code: "a = 1\nb = (2 +\n", status: sandbox.StatusError, errType: "SyntaxError", errLine: 2},
		{name: "name error", code: "a = 1\n\nprint(undefined_name)", status: sandbox.StatusError, errType: "NameError", errLine: 3},
		{name: "error in a function of the cell", code: "def f():\n    raise ValueError('no')\n\nf()", status: sandbox.StatusError, errType: "ValueError", errLine: 2},
		{name: "output before an error is kept", code: "print('before')\n1 / 0", status: sandbox.StatusError, stdout: "before\n", errType: "ZeroDivisionError", errLine: 2},
		{name: "works after errors", code: "y * 2", status: sandbox.StatusOK, value: "4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := execCode(t, s, tc.code)
			if res.Status != tc.status || res.Value != tc.value || string(res.Stdout) != tc.stdout {
				t.Errorf("got %s\nwant status=%s value=%q stdout=%q", describe(res), tc.status, tc.value, tc.stdout)
			}
			switch {
			case tc.errType == "" && res.Error != nil:
				t.Errorf("unexpected error %+v", *res.Error)
			case tc.errType != "" && res.Error == nil:
				t.Errorf("no structured error, want %s at line %d", tc.errType, tc.errLine)
			case tc.errType != "" && (res.Error.Type != tc.errType || res.Error.Line != tc.errLine):
				t.Errorf("error %s at line %d, want %s at line %d (%+v)", res.Error.Type, res.Error.Line, tc.errType, tc.errLine, *res.Error)
			}
		})
	}
}

// TestSessionTimeoutKeepsState proves a cell past its wall time is
// interrupted with KeyboardInterrupt and the session, variables included,
// survives.
func TestSessionTimeoutKeepsState(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	wantOK(t, execCode(t, s, "kept = 'still here'"))
	start := time.Now()
	res := execCell(t, s, sandbox.Cell{Code: "while True:\n    pass", TimeoutMS: 500})
	if res.Status != sandbox.StatusTimeout || res.Error == nil || res.Error.Type != "KeyboardInterrupt" {
		t.Fatalf("want a timeout with KeyboardInterrupt, got %s", describe(res))
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the interrupted cell took %s for a 500ms limit", took)
	}
	if res := execCode(t, s, "kept"); res.Status != sandbox.StatusOK || res.Value != "'still here'" {
		t.Fatalf("after the interrupt the session lost its variables: %s", describe(res))
	}
}

// TestSessionUnresponsiveCellKillsSession proves a cell that ignores the
// interrupt gets the whole session killed: the Result says so, later calls
// fail with ErrSessionClosed, every process the session started is gone
// from the host, and Close leaves no cgroup of this test process behind.
func TestSessionUnresponsiveCellKillsSession(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	s := newSession(t, rt, sandbox.Limits{})
	token := uniqueToken()
	code := fmt.Sprintf("import signal, subprocess\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"+
		"subprocess.Popen([%q, '1000'], executable='sleep')\nwhile True:\n    pass", token)

	// Watch the host while the cell runs: the positive control that the
	// process scan and the cgroup glob see this session at all.
	sp := spot(token, true)
	res := execCell(t, s, sandbox.Cell{Code: code, TimeoutMS: 500})
	sight, seen := sp.result()
	if res.Status != sandbox.StatusTimeout || !strings.Contains(res.Reason, "session was killed") {
		t.Errorf("want a timeout whose reason says the session was killed, got %s", describe(res))
	}
	if !seen {
		t.Fatalf("positive control: the cell's `sleep 1000` named %s was never seen on the host", token)
	}
	if want := "/crucible/" + strconv.Itoa(os.Getpid()) + "."; !strings.Contains(sight.cgroups, want) {
		t.Errorf("positive control: the session's process %d is not in a cgroup under %s:\n%s", sight.pid, want, sight.cgroups)
	}
	if len(ownCgroups()) == 0 {
		t.Errorf("positive control: no cgroup of this process found while the session is open")
	}

	if left := awaitProcs(token, true, false, 2*time.Second); len(left) > 0 {
		t.Errorf("2s after the session was killed, its processes %v are alive", left)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if res, err := s.Exec(ctx, sandbox.Cell{Code: "1"}); !errors.Is(err, sandbox.ErrSessionClosed) {
		t.Errorf("Exec after the kill: want ErrSessionClosed, got %v (%s)", err, describe(res))
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if left := ownCgroups(); len(left) > 0 {
		t.Errorf("after Close, cgroups of this process remain: %v", left)
	}
}

// TestSessionInterpreterDeath proves a cell that ends the interpreter ends
// the session, with a status saying how: its own exit or a signal; the
// next call fails with ErrSessionClosed. (The memory limit restarts the
// interpreter instead: sessionrestart_test.go.)
func TestSessionInterpreterDeath(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	for _, tc := range []struct {
		name   string
		lim    sandbox.Limits
		code   string
		status sandbox.Status
		exit   int
		signal string
	}{
		{"exit", sandbox.Limits{}, "import os\nos._exit(3)", sandbox.StatusError, 3, ""},
		{"SIGKILL itself", sandbox.Limits{}, "import os\nos.kill(os.getpid(), 9)", sandbox.StatusKilled, -1, "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, rt, tc.lim)
			res := execCode(t, s, tc.code)
			if res.Status != tc.status || res.ExitCode != tc.exit || res.Signal != tc.signal ||
				!strings.Contains(res.Reason, "session is closed") {
				t.Errorf("got %s\nwant status=%s exit=%d signal=%q and a reason saying the session is closed",
					describe(res), tc.status, tc.exit, tc.signal)
			}
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			if _, err := s.Exec(ctx, sandbox.Cell{Code: "1"}); !errors.Is(err, sandbox.ErrSessionClosed) {
				t.Errorf("Exec after the interpreter died: want ErrSessionClosed, got %v", err)
			}
		})
	}
}

// TestSessionCPULimit proves the CPU-time limit applies to each cell: a
// spinning cell is interrupted with cpu_limit long before its wall time,
// and the session is kept.
func TestSessionCPULimit(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{CPUTimeMS: 500})
	wantOK(t, execCode(t, s, "n = 5"))
	res := execCell(t, s, sandbox.Cell{Code: "while True:\n    pass", TimeoutMS: 60_000})
	if res.Status != sandbox.StatusCPULimit || res.Metrics.CPUMS < 500 {
		t.Fatalf("want cpu_limit after at least 500ms of CPU, got %s (cpu %.0fms)", describe(res), res.Metrics.CPUMS)
	}
	if res := execCode(t, s, "n"); res.Status != sandbox.StatusOK || res.Value != "5" {
		t.Fatalf("the session was not kept after the CPU limit: %s", describe(res))
	}
}

// TestSessionOutputLimit proves the output limit applies to each cell: an
// endless print stops with exactly the limit kept, and the next cell's
// output holds nothing of it.
func TestSessionOutputLimit(t *testing.T) {
	const limit = 64 * sandbox.KiB
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{OutputBytes: limit})
	res := execCell(t, s, sandbox.Cell{Code: "while True:\n    print('x' * 99)", TimeoutMS: 30_000})
	if res.Status != sandbox.StatusOutputLimit || int64(len(res.Stdout)) != limit || !res.StdoutTruncated {
		t.Fatalf("want output_limit with exactly %d bytes of stdout, truncated; got %d bytes, truncated=%v, %s",
			limit, len(res.Stdout), res.StdoutTruncated, describe(res))
	}
	res = execCode(t, s, "print('clean')\n7")
	if res.Status != sandbox.StatusOK || string(res.Stdout) != "clean\n" || res.Value != "7" || res.StdoutTruncated {
		t.Fatalf("the next cell is not clean: %s", describe(res))
	}
	// A cell that writes past the limit once and ends at once is cut and
	// marked alike every time, whether or not its end marker came in the
	// same read as its last bytes.
	for i := range 10 {
		res = execCode(t, s, "import sys\nsys.stdout.write('y' * (64 * 1024 + 100))")
		if res.Status != sandbox.StatusOutputLimit || int64(len(res.Stdout)) != limit || !res.StdoutTruncated {
			t.Fatalf("try %d: want output_limit with %d bytes kept; got %d bytes, truncated=%v, %s",
				i, limit, len(res.Stdout), res.StdoutTruncated, describe(res))
		}
	}
}

// TestSessionFiles proves WriteFile, ReadFile and ListFiles round-trip
// through the working directory (parents created, the cell sees the same
// files) and refuse names that would leave it.
func TestSessionFiles(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	files := map[string][]byte{
		"top.txt":           []byte("top\n"),
		"a/b/c/deep.bin":    {0, 1, 2, 0xff, '\n'},
		"a/b/sibling.txt":   []byte("sibling"),
		"with space.txt":    []byte(""),
		"ünïcödé/naïve.txt": []byte("ok"),
	}
	for name, content := range files {
		if err := s.WriteFile(ctx, name, content); err != nil {
			t.Fatalf("WriteFile(%q): %v", name, err)
		}
	}
	for name, content := range files {
		got, err := s.ReadFile(ctx, name)
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("ReadFile(%q) = %q, %v; want %q", name, got, err, content)
		}
	}
	list, err := s.ListFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]sandbox.FileInfo{}
	for _, fi := range list {
		listed[fi.Name] = fi
	}
	for name, content := range files {
		if fi, ok := listed[name]; !ok || fi.Dir || fi.Size != int64(len(content)) {
			t.Errorf("ListFiles: %q listed as %+v (present %v), want a file of %d bytes", name, fi, ok, len(content))
		}
	}
	for _, dir := range []string{"a", "a/b", "a/b/c", "ünïcödé"} {
		if fi, ok := listed[dir]; !ok || !fi.Dir {
			t.Errorf("ListFiles: directory %q listed as %+v (present %v)", dir, fi, ok)
		}
	}
	// The host writes the files as the session's own uid, whatever it is.
	res := execCode(t, s, "import os\nopen('a/b/c/deep.bin', 'rb').read(), os.stat('a/b/c').st_uid == os.getuid(), os.stat('top.txt').st_uid == os.getuid()")
	if want := "(b'\\x00\\x01\\x02\\xff\\n', True, True)"; res.Value != want {
		t.Errorf("inside the sandbox: %s, want value %s (content, owners)", describe(res), want)
	}

	for _, name := range []string{"", "../escape.txt", "a/../../escape.txt", "/etc/passwd", "/work/top.txt", "nul\x00byte.txt", "./top.txt", "a//b"} {
		if err := s.WriteFile(ctx, name, []byte("x")); !sandbox.IsInputError(err) {
			t.Errorf("WriteFile(%q): want an input error, got %v", name, err)
		}
		if got, err := s.ReadFile(ctx, name); !sandbox.IsInputError(err) || got != nil {
			t.Errorf("ReadFile(%q) = %q, %v; want an input error", name, got, err)
		}
	}
	if _, err := s.ReadFile(ctx, "missing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: want fs.ErrNotExist, got %v", err)
	}
}

// TestSessionLinksRefused proves the host never follows a link a cell
// planted: reading through a link to a sandbox file (/etc/hostname), to
// the host's root through /proc, or to a host file path returns an input
// error and none of their content; writing through a linked directory is
// refused and leaves the host directory it points to untouched; a FIFO is
// refused at once instead of blocking the reader.
func TestSessionLinksRefused(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	hostDir := t.TempDir()
	secret := []byte("host secret " + uniqueToken())
	hostSecret := filepath.Join(hostDir, "secret.txt")
	if err := os.WriteFile(hostSecret, secret, 0o644); err != nil {
		t.Fatal(err)
	}
	code := fmt.Sprintf(`import os
os.symlink('/etc/hostname', 'hostname')
os.symlink('/proc/1/root/etc/shadow', 'shadow')
os.symlink(%[1]q, 'secret')
os.symlink(%[2]q, 'hostdir')
os.symlink('..', 'up')
os.mkfifo('fifo')
sorted(os.listdir('.'))`, hostSecret, hostDir)
	res := execCode(t, s, code)
	if want := "['fifo', 'hostdir', 'hostname', 'secret', 'shadow', 'up']"; res.Status != sandbox.StatusOK || res.Value != want {
		t.Fatalf("planting the links: %s, want value %s", describe(res), want)
	}
	hostname, _ := os.ReadFile("/etc/hostname")
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	for _, name := range []string{"hostname", "shadow", "secret", "hostdir/secret.txt", "up/etc/hostname", "up/proc/1/root/etc/shadow", "fifo"} {
		t.Run("read "+name, func(t *testing.T) {
			type answer struct {
				b   []byte
				err error
			}
			done := make(chan answer, 1)
			go func() {
				b, err := s.ReadFile(ctx, name)
				done <- answer{b, err}
			}()
			select {
			case a := <-done:
				if !sandbox.IsInputError(a.err) || len(a.b) > 0 {
					t.Errorf("ReadFile(%q) = %q, %v; want an input error and no content", name, clipped(a.b), a.err)
				}
				if len(a.b) > 0 && (bytes.Contains(a.b, secret) || bytes.Equal(a.b, hostname)) {
					t.Errorf("ReadFile(%q) returned a host file's content", name)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadFile(%q) still blocked after 5s", name)
			}
		})
	}
	for _, name := range []string{"hostdir/planted.txt", "secret", "up/tmp/planted.txt"} {
		if err := s.WriteFile(ctx, name, []byte("overwritten")); !sandbox.IsInputError(err) {
			t.Errorf("WriteFile(%q): want an input error, got %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(hostDir, "planted.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteFile through the linked directory created a host file (stat: %v)", err)
	}
	if got, _ := os.ReadFile(hostSecret); !bytes.Equal(got, secret) {
		t.Errorf("the host file behind a link changed: %q", got)
	}
}

// TestSessionArtifacts proves a cell's artifacts are exactly the files it
// created or changed, with their content: not files from earlier cells,
// not files the host uploaded, not files it only read or deleted.
func TestSessionArtifacts(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	for _, step := range []struct {
		name   string
		upload string // a file WriteFile puts in place before the cell
		code   string
		want   map[string]string
	}{
		{"created", "", "import os\nos.makedirs('d')\nopen('a.txt', 'w').write('one')\nopen('d/b.txt', 'w').write('two')",
			map[string]string{"a.txt": "one", "d/b.txt": "two"}},
		{"nothing changed", "", "x = 1", nil},
		{"appended", "", "open('a.txt', 'a').write('+')", map[string]string{"a.txt": "one+"}},
		{"uploaded, untouched", "up.txt", "y = 2", nil},
		{"only read", "", "open('a.txt').read()", nil},
		{"deleted", "", "os.remove('d/b.txt')", nil},
		{"replaced by a new file", "", "os.replace('up.txt', 'a.txt')", map[string]string{"a.txt": "uploaded"}},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.upload != "" {
				if err := s.WriteFile(context.Background(), step.upload, []byte("uploaded")); err != nil {
					t.Fatal(err)
				}
			}
			res := execCode(t, s, step.code)
			wantOK(t, res)
			got := map[string]string{}
			for _, a := range res.Artifacts {
				got[a.Name] = string(a.Content)
			}
			if len(got) != len(step.want) {
				t.Fatalf("artifacts %v, want %v", got, step.want)
			}
			for name, content := range step.want {
				if c, ok := got[name]; !ok || c != content {
					t.Errorf("artifact %q = %q (present %v), want %q", name, c, ok, content)
				}
			}
		})
	}
}

// pyProcsWithToken is Python, part of a fmt template (hence the %%), that
// sets procs to the pids, as the sandbox sees them, whose command line
// holds token.
const pyProcsWithToken = `procs = []
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            with open('/proc/%%s/cmdline' %% pid, 'rb') as f:
                if token.encode() in f.read():
                    procs.append(pid)
        except OSError:
            pass
`

// isolationScan is a cell that reports, as JSON on stdout, the files under
// /work and /tmp whose name or content holds token and the processes whose
// command line holds it.
func isolationScan(token string) string {
	return fmt.Sprintf(`import json, os
token = %q
files = []
for top in ('/work', '/tmp'):
    for root, dirs, names in os.walk(top):
        for n in dirs + names:
            p = os.path.join(root, n)
            if token in n:
                files.append(p)
            elif os.path.isfile(p) and not os.path.islink(p):
                with open(p, 'rb') as f:
                    if token.encode() in f.read():
                        files.append(p)
`+pyProcsWithToken+`print(json.dumps({'files': files, 'procs': procs}))`, token)
}

// TestSessionIsolation proves two sessions share nothing: B sees neither
// A's files (through the API or from a cell) nor A's processes. The same
// scan run in A finds both, so the scan is not blind.
func TestSessionIsolation(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	a, b := newSession(t, rt, sandbox.Limits{}), newSession(t, rt, sandbox.Limits{})
	token := uniqueToken()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	secretName := "secret-" + token + ".txt"
	if err := a.WriteFile(ctx, secretName, []byte(token)); err != nil {
		t.Fatal(err)
	}
	wantOK(t, execCode(t, a, fmt.Sprintf("import subprocess\nopen('/tmp/tmp-secret', 'w').write(%q)\nsleeper = subprocess.Popen([%q, '1000'], executable='sleep')", token, token)))
	if len(awaitProcs(token, true, true, 5*time.Second)) == 0 {
		t.Fatalf("positive control: A's `sleep 1000` named %s is not running on the host", token)
	}

	type report struct{ Files, Procs []string }
	scan := func(s sandbox.Session) report {
		t.Helper()
		res := execCode(t, s, isolationScan(token))
		wantOK(t, res)
		var r report
		if err := json.Unmarshal(res.Stdout, &r); err != nil {
			t.Fatalf("scan report: %v in %s", err, describe(res))
		}
		return r
	}
	if r := scan(a); len(r.Files) != 2 || len(r.Procs) != 1 {
		t.Fatalf("positive control: A's own scan found files %v and processes %v, want its 2 files and its sleep", r.Files, r.Procs)
	}
	if r := scan(b); len(r.Files) > 0 || len(r.Procs) > 0 {
		t.Errorf("B sees A's files %v and processes %v", r.Files, r.Procs)
	}
	list, err := b.ListFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range list {
		if strings.Contains(fi.Name, token) {
			t.Errorf("B's ListFiles shows A's file %q", fi.Name)
		}
	}
	if got, err := b.ReadFile(ctx, secretName); !errors.Is(err, fs.ErrNotExist) || len(got) > 0 {
		t.Errorf("B's ReadFile of A's file = %q, %v; want fs.ErrNotExist", got, err)
	}
}

// TestSessionCap proves MaxSessions caps the open sessions with
// ErrTooManySessions, and that closing one makes room.
func TestSessionCap(t *testing.T) {
	rt := newRuntime(t, linux.Options{MaxSessions: 2})
	first := newSession(t, rt, sandbox.Limits{})
	newSession(t, rt, sandbox.Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	if !errors.Is(err, sandbox.ErrTooManySessions) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("third session: want ErrTooManySessions, got %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third := newSession(t, rt, sandbox.Limits{})
	wantOK(t, execCode(t, third, "1"))
}

// TestSessionIdleExpiry proves a session unused for SessionIdleTimeout is
// closed by the runtime: Exec fails with ErrSessionClosed and the runtime
// no longer knows the session's id.
func TestSessionIdleExpiry(t *testing.T) {
	rt := newRuntime(t, linux.Options{SessionIdleTimeout: 300 * time.Millisecond})
	s := newSession(t, rt, sandbox.Limits{})
	wantOK(t, execCode(t, s, "1"))
	if _, ok := rt.Session(s.ID()); !ok {
		t.Fatalf("rt.Session(%q) does not know an open session", s.ID())
	}
	time.Sleep(2 * time.Second)
	if _, err := s.Exec(context.Background(), sandbox.Cell{Code: "1"}); !errors.Is(err, sandbox.ErrSessionClosed) {
		t.Errorf("Exec after 2s idle: want ErrSessionClosed, got %v", err)
	}
	if _, ok := rt.Session(s.ID()); ok {
		t.Errorf("rt.Session(%q) still reports the expired session", s.ID())
	}
}

// TestSessionRichOutputs proves, in the data-science image, that a
// DataFrame comes back as an HTML table, that an open matplotlib figure
// comes back as a valid PNG artifact, that matplotlib finds its seeded
// cache (no warning about a non-writable config directory), and that each
// Result names the image.
func TestSessionRichOutputs(t *testing.T) {
	img := testenv.Image(t, "datascience")
	s := newSession(t, newRuntime(t, imageOptions(img)), sandbox.Limits{})

	res := execCode(t, s, "import pandas as pd\npd.DataFrame({'a': [1, 2]})")
	wantOK(t, res)
	if !strings.Contains(res.ValueHTML, "<table") || !strings.Contains(res.Value, "a") {
		t.Errorf("DataFrame: value %q, html %q; want its repr and an HTML table", res.Value, clipped([]byte(res.ValueHTML)))
	}
	if res.ImageDigest != img.Digest {
		t.Errorf("ImageDigest = %q, want %q", res.ImageDigest, img.Digest)
	}

	res = execCode(t, s, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2, 3], [1, 4, 9])\nax.set_title('squares')")
	wantOK(t, res)
	i := slices.IndexFunc(res.Artifacts, func(a sandbox.Artifact) bool { return a.Name == "figure-1.png" })
	if i < 0 {
		t.Fatalf("no figure-1.png among the artifacts %v", res.Artifacts)
	}
	fig := res.Artifacts[i]
	if fig.MIME != "image/png" || fig.ContentOmitted {
		t.Errorf("figure-1.png: MIME %q, content omitted %v", fig.MIME, fig.ContentOmitted)
	}
	pic, err := png.Decode(bytes.NewReader(fig.Content))
	if err != nil {
		t.Fatalf("figure-1.png is not a valid PNG: %v", err)
	}
	if b := pic.Bounds(); b.Dx() <= 100 || b.Dy() <= 100 {
		t.Errorf("figure-1.png is %dx%d, want more than 100x100", b.Dx(), b.Dy())
	}
	for _, bad := range []string{"writable", "Matplotlib created a temporary", "building the font cache"} {
		if bytes.Contains(res.Stderr, []byte(bad)) {
			t.Errorf("matplotlib complained about its config/cache directory: %q", clipped(res.Stderr))
		}
	}
	if res.ImageDigest != img.Digest {
		t.Errorf("ImageDigest = %q, want %q", res.ImageDigest, img.Digest)
	}
}

// TestSessionCloseEndsRunningCell proves that Close does not wait for a
// running cell: it kills the session at once, the cell returns promptly
// with status killed (exit code -1, the reason saying the session was
// closed), and later calls fail with ErrSessionClosed. Both with and
// without an OnOutput (a streamed cell, as the HTTP API runs them).
func TestSessionCloseEndsRunningCell(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "streamed"}[streamed], func(t *testing.T) {
			s := newSession(t, rt, sandbox.Limits{WallTimeMS: 60_000, CPUTimeMS: 60_000})
			type outcome struct {
				res sandbox.Result
				err error
			}
			cell := sandbox.Cell{Code: "print('sleeping', flush=True)\nimport time; time.sleep(30)"}
			rec := &sandboxtest.OutputRecorder{}
			if streamed {
				cell.OnOutput = rec.Record
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := s.Exec(context.Background(), cell)
				rec.Returned()
				done <- outcome{res, err}
			}()
			time.Sleep(500 * time.Millisecond)
			start := time.Now()
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("Close took %s: it waited for the cell", took)
			}
			select {
			case o := <-done:
				if o.err != nil {
					t.Fatalf("Exec returned error %v, want a Result with status killed", o.err)
				}
				res := o.res
				if res.Status != sandbox.StatusKilled || res.ExitCode != -1 || !strings.Contains(res.Reason, "session was closed") {
					t.Errorf("got %s; want status killed, exit code -1, a reason saying the session was closed", describe(res))
				}
				if string(res.Stdout) != "sleeping\n" {
					t.Errorf("stdout %q, want what the cell printed before Close", res.Stdout)
				}
				if streamed {
					time.Sleep(20 * time.Millisecond) // room for a late call to show
					rec.Check(t, res)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("the running cell did not return after Close")
			}
			if _, err := s.Exec(context.Background(), sandbox.Cell{Code: "1"}); !errors.Is(err, sandbox.ErrSessionClosed) {
				t.Fatalf("Exec after Close: %v, want ErrSessionClosed", err)
			}
		})
	}
}

// execRecorded runs code as a cell with a sandboxtest.OutputRecorder as
// its OnOutput, and fails tb unless the recorder was given exactly the
// Result's output, one call at a time, before Exec returned. It also
// returns how long before Exec returned the first chunk arrived.
func execRecorded(tb testing.TB, s sandbox.Session, code string) (sandbox.Result, time.Duration) {
	tb.Helper()
	rec := &sandboxtest.OutputRecorder{}
	res := execCell(tb, s, sandbox.Cell{Code: code, OnOutput: rec.Record})
	ended := time.Now()
	rec.Returned()
	time.Sleep(20 * time.Millisecond) // room for a late call to show
	rec.Check(tb, res)
	var ahead time.Duration
	if first := rec.First(); !first.IsZero() {
		ahead = ended.Sub(first)
	}
	return res, ahead
}

// TestSessionOnOutput proves a cell's OnOutput gets the cell's output
// while it runs, and exactly the Result's: output that looks like the
// end-of-cell marker earlier versions used, what a thread an earlier cell
// started writes while this cell runs, and nothing past the output limit.
func TestSessionOnOutput(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	s := newSession(t, rt, sandbox.Limits{})
	t.Run("while running", func(t *testing.T) {
		// 300ms of sleep follow the first line: it must arrive long
		// before the cell ends.
		res, ahead := execRecorded(t, s, "import sys, time\nprint('first', flush=True)\ntime.sleep(0.3)\n"+
			"for i in range(3):\n    print('out', i, flush=True)\n    print('err', i, file=sys.stderr, flush=True)\n    time.sleep(0.02)")
		wantOK(t, res)
		if string(res.Stdout) != "first\nout 0\nout 1\nout 2\n" || string(res.Stderr) != "err 0\nerr 1\nerr 2\n" {
			t.Errorf("unexpected output: %s", describe(res))
		}
		if ahead < 100*time.Millisecond {
			t.Errorf("the first chunk arrived %s before Exec returned, want at least 100ms", ahead)
		}
	})
	t.Run("one cell after another", func(t *testing.T) {
		for i := range 3 {
			res, _ := execRecorded(t, s, fmt.Sprintf("print('cell %d')\n%d", i, i))
			if want := fmt.Sprintf("cell %d\n", i); res.Status != sandbox.StatusOK || string(res.Stdout) != want {
				t.Errorf("cell %d: %s, want stdout %q", i, describe(res), want)
			}
		}
	})
	t.Run("marker-looking output", func(t *testing.T) {
		// Each write is a possible start of the cell's marker, the last
		// one right before it.
		code := `import sys, time
sys.stdout.write('a\x1eCRUCIBLE-END-OF-CELL-')
sys.stdout.flush()
time.sleep(0.05)
sys.stdout.write('b\n\x1e')
sys.stdout.flush()
time.sleep(0.05)
sys.stdout.write('\x1eCRUCIBLE-END-OF-CELL-')`
		res, _ := execRecorded(t, s, code)
		if want := "a\x1eCRUCIBLE-END-OF-CELL-b\n\x1e\x1eCRUCIBLE-END-OF-CELL-"; res.Status != sandbox.StatusOK || string(res.Stdout) != want {
			t.Errorf("%s, want stdout %q", describe(res), want)
		}
	})
	t.Run("written by an earlier cell's thread", func(t *testing.T) {
		res, _ := execRecorded(t, s, "import threading, time\n"+
			"def later():\n    time.sleep(0.2)\n    print('from the background', flush=True)\n"+
			"bg = threading.Thread(target=later)\nbg.start()")
		wantOK(t, res)
		time.Sleep(600 * time.Millisecond) // the session is frozen: the thread writes in the next cell
		res, _ = execRecorded(t, s, "bg.join()\nprint('foreground')")
		if want := "from the background\nforeground\n"; string(res.Stdout) != want {
			t.Errorf("%s, want stdout %q", describe(res), want)
		}
	})
	t.Run("output limit", func(t *testing.T) {
		const limit = 1000
		s := newSession(t, rt, sandbox.Limits{OutputBytes: limit})
		// The cell ends on its own right after going over the limit: the
		// marker may arrive in the same read as the excess.
		res, _ := execRecorded(t, s, "import sys\nprint('x' * 5000)\nsys.stderr.write('e' * 3000)")
		if len(res.Stdout) != limit || !res.StdoutTruncated || len(res.Stderr) != limit || !res.StderrTruncated {
			t.Errorf("want %d bytes of each stream, truncated; got %s", limit, describe(res))
		}
		res, _ = execRecorded(t, s, "while True:\n    print('y' * 99, flush=True)")
		if res.Status != sandbox.StatusOutputLimit || len(res.Stdout) != limit || !res.StdoutTruncated {
			t.Errorf("want output_limit with %d bytes of stdout, truncated; got %s", limit, describe(res))
		}
	})
}
