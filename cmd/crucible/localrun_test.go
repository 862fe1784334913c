package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// cliRun is one run of the crucible command with extra environment.
type cliRun struct {
	stdin string
	dir   string
	env   []string
}

// run runs the command to its end: its stdout, stderr and exit code.
func (c cliRun) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := cli{dir: c.dir}.command(args...)
	cmd.Stdin = strings.NewReader(c.stdin)
	cmd.Env = append(cmd.Env, c.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// runMetrics matches the measurements of a run in the summary, which
// differ from run to run.
var runMetrics = regexp.MustCompile(`wall [0-9]+ ms · cpu [0-9]+ ms · peak [0-9.]+[KMG]?i?B`)

// serveUIDBase is the first sandbox uid of the server of these tests, far
// from the default range the local runs take theirs from, so that a
// program's uid tells which ran it.
const serveUIDBase = 2100000000

// TestRunThroughServeSameAsLocal runs a table of programs with `crucible
// run` twice, on a real `crucible serve` (its local socket, its warm and
// prestarted sandboxes) and locally (CRUCIBLE_LOCAL=1), and checks that
// both give the same stdout, stderr (the summary's measurements aside),
// exit code and saved files, and that the first did run on the server.
func TestRunThroughServeSameAsLocal(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	serveArgs := []string{"--warm", "1", "--prestart", "1", "--config", writeTemp(t, "serve.json",
		`{"uid_base": `+strconv.Itoa(serveUIDBase)+`, "uid_count": 1000}`), "--image", "host", "--image", "datascience"}
	sock, _ := startLocalServe(t, "", serveArgs...)
	data := writeTemp(t, "data.csv", "a,b\n1,2\n3,4\n")
	type row struct {
		name  string
		stdin string
		args  []string
		files []string // saved under --out out
	}
	tests := []row{
		{"stdout", "", []string{"-c", `print("hello")`}, nil},
		{"stderr and an exit code", "", []string{"-c", "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)"}, nil},
		{"an exception", "", []string{"-c", "print('before')\n1/0"}, nil},
		{"a missing module, with a hint", "", []string{"-c", "import no_such_module_here"}, nil},
		{"timeout", "", []string{"--timeout", "1s", "-c", "import time\nprint('started', flush=True)\ntime.sleep(60)"}, nil},
		{"output limit", "", []string{"--output", "1KiB", "-c", "print('x' * 5000)"}, nil},
		{"stdin -", "hi there\n", []string{"--stdin", "-", "-c", "import sys; print(sys.stdin.read().upper())"}, nil},
		{"program from stdin", "print(6*7)\n", []string{"-"}, nil},
		{"input file", "", []string{"--file", "data.csv=" + data, "-c", "print(open('data.csv').read().count('\\n'))"}, nil},
		{"artifacts via --out", "", []string{"--out", "out", "-c", makesArtifacts}, []string{"chart.png", "data_table.csv"}},
		{"bash", "", []string{"--lang", "bash", "-c", "echo $((6*7)); echo oops >&2; exit 4"}, nil},
		{"javascript", "", []string{"--lang", "javascript", "-c", "console.log(6*7)"}, nil},
		{"--json", "", []string{"--json", "-c", "print(1)"}, nil},
		{"--policy block: nothing runs", "", []string{"--policy", "block", "-c", "print('ran')\nimport socket"}, nil},
		{"--policy warn: runs, the finding printed", "", []string{"--policy", "warn", "-c", "print('ran')\nimport socket"}, nil},
		{"invalid request", "", []string{"--memory", "1KiB", "-c", "print(1)"}, nil},
		{"an image the server lacks", "", []string{"--rootfs", "/", "-c", "print(1)"}, nil},
		{"another store, whose images a hint names", "", []string{"--store", t.TempDir(), "-c", "import pandas"}, nil},
		{"datascience: pandas", "", []string{"--image", "datascience", "--file", "data.csv=" + data, "-c",
			"import pandas as pd\nprint(pd.read_csv('data.csv').sum().to_dict())"}, nil},
		{"datascience: a chart via --out", "", []string{"--image", "datascience", "--out", "out", "-c",
			"import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('chart.png')\nprint('saved')"}, []string{"chart.png"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [2]string
			for i, env := range []string{"CRUCIBLE_SOCKET=" + sock, localEnv + "=1"} {
				dir := t.TempDir()
				stdout, stderr, code := cliRun{stdin: tt.stdin, dir: dir, env: []string{env}}.run(t, append([]string{"run"}, tt.args...)...)
				if tt.args[0] == "--json" {
					stdout = withoutMetrics(t, stdout)
				}
				got[i] = "stdout: " + stdout + "\nstderr: " + runMetrics.ReplaceAllString(stderr, "wall · cpu · peak") +
					"\nexit: " + strconv.Itoa(code) + "\nfiles: " + savedFiles(t, filepath.Join(dir, "out"))
			}
			if got[0] != got[1] {
				t.Errorf("through crucible serve:\n%s\n\nlocally:\n%s", got[0], got[1])
			}
			for _, f := range tt.files {
				if !strings.Contains(got[0], f) {
					t.Errorf("%s not saved:\n%s", f, got[0])
				}
			}
		})
	}
	t.Run("ran on the server", func(t *testing.T) {
		for _, img := range [][]string{nil, {"--image", "datascience"}} {
			for i, env := range []string{"CRUCIBLE_SOCKET=" + sock, localEnv + "=1"} {
				args := append(append([]string{"run"}, img...), "-c", "import os; print(os.getuid())")
				stdout, stderr, code := cliRun{env: []string{env}}.run(t, args...)
				uid, err := strconv.Atoi(strings.TrimSpace(stdout))
				if code != 0 || err != nil {
					t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
				}
				if onServer := uid >= serveUIDBase && uid < serveUIDBase+1000; onServer != (i == 0) {
					t.Errorf("%q with %s: the program ran as uid %d; on the server: %v, want %v", args, env, uid, onServer, i == 0)
				}
			}
		}
	})
	t.Run("--local", func(t *testing.T) {
		stdout, _, _ := cliRun{env: []string{"CRUCIBLE_SOCKET=" + sock}}.run(t, "run", "--local", "-c", "import os; print(os.getuid())")
		if uid, _ := strconv.Atoi(strings.TrimSpace(stdout)); uid >= serveUIDBase && uid < serveUIDBase+1000 {
			t.Errorf("with --local the program ran on the server (uid %d)", uid)
		}
	})
}

// TestRunSkipsOtherUsersServe checks that `crucible run` never sends its
// run to a socket that is another user's, or on which another user's
// process listens: it runs the program itself, and the listener (a fake
// server run as nobody, that answers any request with a forged result)
// receives nothing.
func TestRunSkipsOtherUsersServe(t *testing.T) {
	testenv.Root(t)
	tests := []struct {
		name      string
		chownRoot bool // give the socket file to root, as if root made it
	}{
		{"socket of another user", false},
		{"root's socket, another user listening", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "crucible-uid-test")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			sock, got := filepath.Join(dir, "serve.sock"), filepath.Join(dir, "received")
			fake := exec.Command("/usr/bin/python3", "-c", fakeServe, sock, got)
			fake.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := fake.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := fake.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = fake.Process.Kill(); _ = fake.Wait() })
			if line, err := bufio.NewReader(out).ReadString('\n'); line != "listening\n" {
				t.Fatalf("fake server: %q, %v", line, err)
			}
			if tt.chownRoot {
				if err := os.Chown(sock, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			stdout, stderr, code := cliRun{env: []string{"CRUCIBLE_SOCKET=" + sock}}.run(t, "run", "-c", "print(1)")
			if stdout != "1\n" || code != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want the program's own output", code, stdout, stderr)
			}
			_ = fake.Process.Kill()
			_ = fake.Wait()
			if b, err := os.ReadFile(got); err == nil && len(b) > 0 {
				t.Errorf("the other user's server received %q", b)
			}
		})
	}
}

// fakeServe is a server of another user on the socket argv[1]: it answers
// each connection with a forged result and appends what it received to
// argv[2].
const fakeServe = `import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
s.listen()
print("listening", flush=True)
while True:
    c, _ = s.accept()
    try:
        c.sendall(b'{"result": {"status": "ok", "exit_code": 0, "stdout": "FAKE\\n"}}\n')
        c.settimeout(5)
        data = c.recv(65536)
    except OSError:
        data = b""
    with open(sys.argv[2], "ab") as f:
        f.write(data)
    c.close()
`

// writeTemp writes content to a file name in a temporary directory and
// returns its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// withoutMetrics is a --json Result without its measurements.
func withoutMetrics(t *testing.T, out string) string {
	t.Helper()
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v: %q", err, out)
	}
	delete(res, "metrics")
	b, _ := json.Marshal(res)
	return string(b)
}

// savedFiles lists the files under dir with their contents' sizes and a
// prefix of each ("" when dir does not exist).
func savedFiles(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		head, _ := io.ReadAll(io.LimitReader(f, 64))
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + "=" + strconv.Quote(string(head)) + " ")
		return nil
	})
	return b.String()
}

// TestServeSocketOnlyForItsUser checks the server's side: its local socket
// is mode 0600, and a caller of another user that reaches it all the same
// (the test opens the mode up) gets no answer: its request is not run.
func TestServeSocketOnlyForItsUser(t *testing.T) {
	testenv.Root(t)
	sock, _ := startLocalServe(t, "", "--prestart", "0")
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode %v, want 0600", perm)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(filepath.Dir(sock)), 0o755); err != nil {
		t.Fatal(err)
	}
	caller := exec.Command("/usr/bin/python3", "-c", `import socket, sys
c = socket.socket(socket.AF_UNIX)
c.connect(sys.argv[1])
try:
    c.sendall(b'{"runtime": {"rootfs": "", "digest": ""}, "request": {"code": "print(1)"}}\n')
    c.settimeout(30)
    print(repr(c.recv(65536)))
except OSError:  # closed before the request was written
    print(repr(b""))`, sock)
	caller.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := caller.CombinedOutput()
	if err != nil || string(out) != "b''\n" {
		t.Errorf("another user's caller got %q (%v), want the connection closed unanswered", out, err)
	}
}

// TestRunThroughServeInterrupted interrupts `crucible run` (SIGINT, as
// Ctrl-C) once its program has printed a line, through a local serve and
// locally: the run is killed on the server as it is here, with the same
// summary and exit code.
func TestRunThroughServeInterrupted(t *testing.T) {
	testenv.Root(t)
	sock, _ := startLocalServe(t, "", "--warm", "1", "--prestart", "0")
	var got [2]string
	for i, env := range []string{"CRUCIBLE_SOCKET=" + sock, localEnv + "=1"} {
		cmd := cli{}.command("run", "-c", "import time\nprint('started', flush=True)\ntime.sleep(60)")
		cmd.Env = append(cmd.Env, env)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		if line, err := r.ReadString('\n'); line != "started\n" {
			t.Fatalf("%s: first line %q, %v", env, line, err)
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(r)
		_ = cmd.Wait()
		got[i] = "stdout after: " + string(rest) + "\nstderr: " + runMetrics.ReplaceAllString(stderr.String(), "wall · cpu · peak") +
			"\nexit: " + strconv.Itoa(cmd.ProcessState.ExitCode())
	}
	if got[0] != got[1] {
		t.Errorf("through crucible serve:\n%s\n\nlocally:\n%s", got[0], got[1])
	}
	t.Logf("both:\n%s", got[0])
	if !strings.Contains(got[0], "killed") {
		t.Errorf("the run was not killed:\n%s", got[0])
	}
}
