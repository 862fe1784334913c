package linux_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// TestSessionMemoryRestart proves a cell that runs the interpreter out of
// memory does not end its session: the cell ends as memory_limit with
// Restarted set and a reason saying every variable was lost, the next
// cell runs in a fresh interpreter of the same sandbox (its variables
// gone, its files kept), and this holds cell after cell. A process an
// earlier cell left running does not survive the restart, and once the
// session is closed nothing of it is left on the host: no process, no
// cgroup. Each hostile program allocates past the session's limit in
// another way; numpy's runs in the data-science image.
func TestSessionMemoryRestart(t *testing.T) {
	cases := []struct {
		name string
		opts func(t *testing.T) linux.Options
		bomb string
	}{
		{"bytearray growth", func(*testing.T) linux.Options { return linux.Options{} },
			"b = bytearray()\nwhile True:\n    b += b'x' * (1 << 20)"},
		{"list of chunks", func(*testing.T) linux.Options { return linux.Options{} },
			"chunks = []\nwhile True:\n    chunks.append(b'y' * (1 << 20))"},
		{"numpy", func(t *testing.T) linux.Options { return imageOptions(testenv.Image(t, "datascience")) },
			"import numpy as np\narrays = []\nwhile True:\n    arrays.append(np.ones(1 << 20))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, tc.opts(t))
			const limit = 160 * sandbox.MiB
			s := newSession(t, rt, sandbox.Limits{MemoryBytes: limit})
			token := uniqueToken()
			wantOK(t, execCode(t, s, "x = 42\nopen('keep.txt', 'w').write('kept')\n"+
				"import subprocess, sys\nleft = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', '"+token+"'])"))
			if found := awaitProcs(token, true, true, 5*time.Second); len(found) == 0 {
				t.Fatalf("positive control: the process the cell left, marked %s, was never seen on the host", token)
			}
			for round := 1; round <= 2; round++ {
				began := time.Now()
				res := execCell(t, s, sandbox.Cell{Code: tc.bomb, TimeoutMS: 50_000})
				// Reported, not asserted: what the call took beyond the
				// cell's own wall time is mostly the restart.
				t.Logf("round %d: the cell ran %.0f ms, the call took %d ms", round, res.Metrics.WallMS, time.Since(began).Milliseconds())
				if res.Status != sandbox.StatusMemoryLimit || !res.Restarted || res.Signal != "SIGKILL" ||
					!strings.Contains(res.Reason, "160MiB") || !strings.Contains(res.Reason, "restarted") ||
					!strings.Contains(res.Reason, "every variable") || !strings.Contains(res.Reason, "files") {
					t.Fatalf("round %d: want memory_limit, restarted, SIGKILL and a reason naming the limit, the restart and what was lost; got %s restarted=%v",
						round, describe(res), res.Restarted)
				}
				if left := awaitProcs(token, false, false, 2*time.Second); len(left) > 0 {
					t.Fatalf("round %d: the process an earlier cell left, %v, outlived the restart", round, left)
				}
				res = execCode(t, s, "'x' in globals(), open('keep.txt').read()")
				if res.Status != sandbox.StatusOK || res.Value != "(False, 'kept')" || res.Restarted {
					t.Fatalf("round %d: the next cell should run in a fresh interpreter with the files kept; got %s", round, describe(res))
				}
				wantOK(t, execCode(t, s, "x = 42"))
			}
			res := execCode(t, s, "x + 1")
			if res.Value != "43" {
				t.Fatalf("the restarted session does not keep its new variables: %s", describe(res))
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if left := ownCgroups(); len(left) > 0 {
				t.Errorf("after Close, cgroups of this process remain: %v", left)
			}
			if left := procsWith(token, false); len(left) > 0 {
				t.Errorf("after Close, processes of the session remain: %v", left)
			}
		})
	}
}

// TestSessionMemoryKeptInterpreter proves a cell that runs out of memory
// while its interpreter survives ends as memory_limit, not as a generic
// error, with a reason saying the variables are kept, and keeps them:
// a subprocess the OOM killer ended, or an allocation refused with
// MemoryError.
func TestSessionMemoryKeptInterpreter(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	for _, tc := range []struct {
		name, code, reason string
	}{
		{"a child killed", "import subprocess, sys\nr = subprocess.run([sys.executable, '-c', " +
			"'b = bytearray()\\nwhile True:\\n    b += bytes(1 << 20)'])\nr.returncode", "a process it started was killed"},
		{"MemoryError", "bytearray(1 << 50)", "MemoryError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, rt, sandbox.Limits{MemoryBytes: 128 * sandbox.MiB})
			wantOK(t, execCode(t, s, "x = 42"))
			res := execCell(t, s, sandbox.Cell{Code: tc.code, TimeoutMS: 50_000})
			if res.Status != sandbox.StatusMemoryLimit || res.Restarted || !strings.Contains(res.Reason, tc.reason) ||
				!strings.Contains(res.Reason, "every variable is kept") {
				t.Fatalf("want memory_limit, not restarted, a reason naming %q and saying the variables are kept; got %s restarted=%v",
					tc.reason, describe(res), res.Restarted)
			}
			if res := execCode(t, s, "x"); res.Value != "42" {
				t.Fatalf("the variables were not kept: %s", describe(res))
			}
		})
	}
}

// TestSessionDeathStillEnds proves only the memory limit restarts an
// interpreter: one that exits (its own code asked for it) still ends its
// session, and Done says so by the time the cell returns.
func TestSessionDeathStillEnds(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	s := newSession(t, rt, sandbox.Limits{})
	res := execCode(t, s, "import os\nos._exit(3)")
	if res.Restarted || res.ExitCode != 3 {
		t.Fatalf("os._exit(3): want exit 3 and no restart, got %s restarted=%v", describe(res), res.Restarted)
	}
	// Closed by the time the cell returns: a caller that looks at once
	// (crucible session, to stop reading cells) must see it.
	select {
	case <-s.(interface{ Done() <-chan struct{} }).Done():
	default:
		t.Fatal("Done is not closed when the cell whose interpreter exited returns")
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := s.Exec(ctx, sandbox.Cell{Code: "1"}); !errors.Is(err, sandbox.ErrSessionClosed) {
		t.Fatalf("Exec after the exit: want ErrSessionClosed, got %v", err)
	}
}

// TestWarmSessionMemoryRestart proves a session served warm restarts
// as its own: the fresh interpreter gets the session's environment and
// its rlimits, lowered from the warm kernel's largest (a restart that
// skipped the setup would leave them raised), and preloads pandas again.
func TestWarmSessionMemoryRestart(t *testing.T) {
	opts := imageOptions(testenv.Image(t, "datascience"))
	opts.WarmSessions = 1
	rt := newRuntime(t, opts)
	awaitWarmSessions(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python, Env: map[string]string{"CRUCIBLE_TEST_VAR": "kept"},
		Limits: sandbox.Limits{MemoryBytes: 320 * sandbox.MiB, OpenFiles: 64, Processes: 32}})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close()
	if st := rt.WarmSessionStats(); st.Hits != 1 {
		t.Fatalf("positive control: the session was not served warm: %+v", st)
	}
	const probe = "import os, resource, sys\n(os.environ.get('CRUCIBLE_TEST_VAR'), resource.getrlimit(resource.RLIMIT_NOFILE), " +
		"resource.getrlimit(resource.RLIMIT_NPROC), 'pandas' in sys.modules)"
	const want = "('kept', (64, 64), (32, 32), True)"
	if res := execCode(t, s, probe); res.Value != want {
		t.Fatalf("positive control, before the restart: %s, want %s", describe(res), want)
	}
	res := execCell(t, s, sandbox.Cell{Code: "b = bytearray()\nwhile True:\n    b += bytes(1 << 20)", TimeoutMS: 50_000})
	if res.Status != sandbox.StatusMemoryLimit || !res.Restarted {
		t.Fatalf("want memory_limit and a restart, got %s restarted=%v", describe(res), res.Restarted)
	}
	if res := execCode(t, s, probe); res.Value != want {
		t.Fatalf("after the restart: %s, want %s", describe(res), want)
	}
}

// TestSessionRestartStopsWhenIdle: a cell plants a start-up hook
// (usercustomize, in HOME's user site) that makes the next interpreter
// spin in a thread, then runs the interpreter out of memory. The
// restarted interpreter runs the hook, and is then stopped until the next
// cell, as after any cell: the CPU the spinning thread gets before the
// next cell, all billed to that cell, is a small fraction of the 2 s the
// host waits. (A cell can so change how the next interpreter starts, as
// it can change the interpreter it runs in: see sandbox.Session.)
func TestSessionRestartStopsWhenIdle(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	s := newSession(t, rt, sandbox.Limits{MemoryBytes: 128 * sandbox.MiB})
	plant := `import os, site, sys
d = site.getusersitepackages()
os.makedirs(d, exist_ok=True)
open(os.path.join(d, 'usercustomize.py'), 'w').write(
    "import threading\nopen('/work/hook-ran', 'w').close()\n"
    "def spin():\n    while True:\n        pass\n"
    "threading.Thread(target=spin, daemon=True).start()\n")
d`
	wantOK(t, execCode(t, s, plant))
	res := execCell(t, s, sandbox.Cell{Code: "b = bytearray()\nwhile True:\n    b += bytes(1 << 20)", TimeoutMS: 50_000})
	if res.Status != sandbox.StatusMemoryLimit || !res.Restarted {
		t.Fatalf("want memory_limit and a restart, got %s", describe(res))
	}
	time.Sleep(2 * time.Second)
	res = execCode(t, s, "import os\nos.path.exists('/work/hook-ran')")
	if res.Value != "True" {
		t.Fatalf("positive control: the planted hook did not run in the restarted interpreter: %s", describe(res))
	}
	// Stopped 20 ms after the restart, it can have used at most that of
	// each CPU, and the cell's own few ms; unstopped, most of 2 s.
	if res.Metrics.CPUMS > 200 {
		t.Errorf("the restarted interpreter's thread spun %.0f ms of CPU in the 2 s before the next cell: it was not stopped", res.Metrics.CPUMS)
	}
	t.Logf("CPU billed to the next cell: %.0f ms", res.Metrics.CPUMS)
}
