package linux_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The tests in this file are hostile cells against a session's own
// machinery: the time between cells, the kernel's reply channel and the
// split of its output into cells. A cell runs inside the kernel's
// interpreter, so each attack uses what the kernel has: its reply file
// (import __main__), the request it is serving (found on the stack), its
// threads.

// sessionCgroupCPU reads, from the host, the CPU time the only session
// cgroup of this test process has used so far.
func sessionCgroupCPU(tb testing.TB) time.Duration {
	tb.Helper()
	for _, dir := range ownCgroups() {
		if strings.Contains(dir, "/cpuacct/") {
			ns, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
			if err != nil {
				tb.Fatalf("read the session's CPU time: %v", err)
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(ns)), 10, 64)
			if err != nil {
				tb.Fatalf("parse %s/cpuacct.usage: %v", dir, err)
			}
			return time.Duration(n)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "cpu.stat")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
					us, _ := strconv.ParseInt(v, 10, 64)
					return time.Duration(us) * time.Microsecond
				}
			}
		}
	}
	tb.Fatalf("no CPU accounting cgroup of this process among %v", ownCgroups())
	return 0
}

// execBounded runs cell in s, but waits for it at most limit: a cell that
// does not return by then fails tb and the session is closed (which ends
// any cell), so that a hang fails the test instead of the binary.
func execBounded(tb testing.TB, s sandbox.Session, cell sandbox.Cell, limit time.Duration) (sandbox.Result, error) {
	tb.Helper()
	type outcome struct {
		res sandbox.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.Exec(context.Background(), cell)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(limit):
		tb.Errorf("Exec did not return within %s (the cell's wall limit is %dms): closing the session", limit, cell.TimeoutMS)
		_ = s.Close()
		o := <-done
		return o.res, o.err
	}
}

// wantSessionClosed fails tb unless the next Exec in s is refused with
// ErrSessionClosed.
func wantSessionClosed(tb testing.TB, s sandbox.Session) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if res, err := s.Exec(ctx, sandbox.Cell{Code: "'after'"}); !errors.Is(err, sandbox.ErrSessionClosed) {
		tb.Errorf("Exec after the session was killed: want ErrSessionClosed, got %v (%s)", err, describe(res))
	}
}

// TestSessionIdleBusyLoops proves a session cannot use CPU between cells:
// a cell leaves a busy thread and a busy forked child behind, and for the
// two seconds before the next cell the session's cgroup, read from the
// host, gains (next to) no CPU time. The next cell sees both still alive:
// they were held, not killed.
func TestSessionIdleBusyLoops(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	s := newSession(t, rt, sandbox.Limits{})
	res := execCode(t, s, `import os, threading
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
child = os.fork()
if child == 0:
    spin()
child`)
	wantOK(t, res)
	before := sessionCgroupCPU(t)
	time.Sleep(2 * time.Second)
	idle := sessionCgroupCPU(t) - before
	t.Logf("CPU used between the cells: %s", idle)
	if idle > 100*time.Millisecond {
		t.Errorf("the session used %s of CPU in the 2s no cell ran (a busy thread and a busy child), want next to none", idle)
	}
	res = execCode(t, s, `import threading
assert any(t.name != 'MainThread' for t in threading.enumerate()), 'the spinning thread is gone'
os.kill(child, 0)
'both alive'`)
	if res.Status != sandbox.StatusOK || res.Value != "'both alive'" {
		t.Errorf("positive control: the spinners should be alive in the next cell, got %s", describe(res))
	}
}

// TestSessionBrokenReplyChannel proves a cell that breaks the kernel's
// reply channel, by writing to the reply file directly or closing it, ends
// within its wall limit with status killed, its session closed and its
// processes gone: the host does not wait, untimed, for a reply that can no
// longer come while the cell burns CPU, nor skips what it cannot read.
func TestSessionBrokenReplyChannel(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	for _, tc := range []struct {
		name, attack, reason string
	}{
		{"a line longer than a reply may be", "os.write(__main__.REPLIES.fileno(), b'x' * (65 << 20))", "longer than"},
		{"a line that is not a reply", "os.write(__main__.REPLIES.fileno(), b'not a reply\\n')", "not a reply"},
		{"closed", "os.close(__main__.REPLIES.fileno())", "did not exit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, rt, sandbox.Limits{})
			token := uniqueToken()
			code := fmt.Sprintf(`import __main__, os, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
subprocess.Popen([sys.executable, '-c', 'while True: pass', %q])
%s
while True:
    pass`, token, tc.attack)
			res, err := execBounded(t, s, sandbox.Cell{Code: code, TimeoutMS: 3000}, 20*time.Second)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			t.Logf("%s", describe(res))
			if res.Status != sandbox.StatusKilled || !strings.Contains(res.Reason, "reply channel") ||
				!strings.Contains(res.Reason, tc.reason) || !strings.Contains(res.Reason, "session was killed") {
				t.Errorf("want status killed, with a reason naming the reply channel, saying %q and that the session was killed; got %s", tc.reason, describe(res))
			}
			if left := awaitProcs(token, true, false, 2*time.Second); len(left) > 0 {
				t.Errorf("2s after the cell returned, its busy child %v is alive", left)
			}
			wantSessionClosed(t, s)
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if left := ownCgroups(); len(left) > 0 {
				t.Errorf("after Close, cgroups of this process remain: %v", left)
			}
		})
	}
}

// TestSessionDeafKernel proves a cell too large for the request pipe
// cannot hang Exec past its wall limit when an earlier cell made the
// kernel stop reading requests: the write is bounded by the wall timer.
func TestSessionDeafKernel(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	s := newSession(t, rt, sandbox.Limits{})
	wantOK(t, execCode(t, s, `import __main__, time
class Deaf:
    kept = __main__.REQUESTS  # the request pipe stays open, unread
    def readline(self):
        while True:
            try:
                time.sleep(3600)
            except KeyboardInterrupt:
                pass
__main__.REQUESTS = Deaf()`))
	big := strings.Repeat("# a cell larger than a pipe holds\n", 64<<10) + "'read'"
	res, err := execBounded(t, s, sandbox.Cell{Code: big, TimeoutMS: 2000}, 20*time.Second)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if res.Status != sandbox.StatusKilled || !strings.Contains(res.Reason, "did not read the cell") {
		t.Errorf("want status killed, with a reason saying the kernel did not read the cell; got %s", describe(res))
	}
	wantSessionClosed(t, s)
}

// TestSessionForgedReply proves a reply a cell forges for a later cell
// never becomes that cell's result: a reply for another cell, sent while a
// cell runs, and a reply a thread sends when no cell runs (or as the next
// cell starts) both end the session, whose next cell is refused.
func TestSessionForgedReply(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	forged := `{"id": 2, "status": "ok", "value": "'forged'"}` // a Python dict
	for _, tc := range []struct {
		name string
		code string
	}{
		{"during the cell", "import __main__\n__main__.send(" + forged + ")"},
		{"from a thread between cells", `import __main__, threading, time
def forge():
    time.sleep(0.3)
    __main__.send(` + forged + `)
threading.Thread(target=forge, daemon=True).start()`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, rt, sandbox.Limits{})
			first, err := execBounded(t, s, sandbox.Cell{Code: tc.code}, callTimeout)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			time.Sleep(time.Second) // the thread sends now, if it can
			res, err := execBounded(t, s, sandbox.Cell{Code: "import time\ntime.sleep(0.5)\n'genuine'"}, callTimeout)
			switch {
			case err == nil && res.Value == "'forged'":
				t.Fatalf("the forged reply became the next cell's result: %s", describe(res))
			case err == nil && res.Value == "'genuine'" && res.Status == sandbox.StatusOK:
				t.Fatalf("the forgery went unnoticed (first cell: %s)", describe(first))
			case err == nil:
				if res.Status != sandbox.StatusKilled || !strings.Contains(res.Reason, "reply") {
					t.Errorf("next cell: want status killed with a reason naming the stray reply, got %s", describe(res))
				}
			case errors.Is(err, sandbox.ErrSessionClosed):
				if first.Status != sandbox.StatusKilled || !strings.Contains(first.Reason, "reply") {
					t.Errorf("forging cell: want status killed with a reason naming the stray reply, got %s", describe(first))
				}
			default:
				t.Fatalf("next cell: %v", err)
			}
			wantSessionClosed(t, s)
		})
	}
}

// TestSessionForgedMarker proves a cell cannot put output into a later
// cell nor end a later cell's output early by writing the marker the
// kernel ends a cell's output with: its own (read from the request the
// kernel serves, on the stack) followed by text, and the next cell's, by a
// thread that finds the request while that cell runs.
func TestSessionForgedMarker(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	t.Run("own marker", func(t *testing.T) {
		s := newSession(t, rt, sandbox.Limits{})
		res := execCode(t, s, `import sys
request = sys._getframe().f_back.f_locals['request']
sys.stdout.write(request.get('marker', '') + 'injected\n')
sys.stdout.flush()`)
		if res.Status != sandbox.StatusOK {
			t.Fatalf("forging cell: %s", describe(res))
		}
		res = execCode(t, s, "print('genuine')")
		if string(res.Stdout) != "genuine\n" {
			t.Errorf("the next cell's stdout is %q, want %q: output of the cell before leaked into it", res.Stdout, "genuine\n")
		}
	})
	t.Run("next cell's marker", func(t *testing.T) {
		s := newSession(t, rt, sandbox.Limits{})
		res := execCode(t, s, `import sys, threading, time
def forge():
    for _ in range(300):
        for frame in list(sys._current_frames().values()):
            while frame is not None:
                request = frame.f_locals.get('request') if frame.f_code.co_name == 'run_cell' else None
                if isinstance(request, dict) and request.get('id') == 2:
                    sys.stdout.write(request.get('marker', '') + 'tail\n')
                    sys.stdout.flush()
                    return
                frame = frame.f_back
        time.sleep(0.01)
threading.Thread(target=forge, daemon=True).start()`)
		wantOK(t, res)
		second := execCode(t, s, "import time\ntime.sleep(0.5)\nprint('second')")
		third := execCode(t, s, "print('third')")
		if string(third.Stdout) != "third\n" {
			t.Errorf("the third cell's stdout is %q, want %q (the second cell's: %q)", third.Stdout, "third\n", second.Stdout)
		}
		if !strings.Contains(string(second.Stdout), "second\n") {
			t.Errorf("the second cell's stdout is %q: its own output is missing", second.Stdout)
		}
	})
}
