package sandboxtest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// The subtests in this file are hostile cells against a session's own
// machinery, for runtimes that have sessions (sandbox.SessionRuntime); the
// others skip them. A Python cell runs in the kernel's interpreter, so the
// attacks use what a kernel has: its reply file and send function
// (__main__.REPLIES, __main__.send), the request it serves (on the stack),
// its threads. A runtime whose kernel has none of them passes as the
// attack fails; what is checked is the promise, however kept.

// sessionOf starts a Python session of the suite's runtime with lim, closed
// when t ends; it skips t for a runtime without sessions.
func (s *suite) sessionOf(t *testing.T, lim sandbox.Limits) sandbox.Session {
	t.Helper()
	sr, ok := s.rt.(sandbox.SessionRuntime)
	if !ok {
		t.Skip("the runtime has no sessions")
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	ses, err := sr.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python, Limits: lim})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Cleanup(func() { _ = ses.Close() })
	return ses
}

// execCell runs a cell, waiting at most runTimeout: a cell that does not
// return by then fails t and its session is closed (which must end the
// cell), so that a hang fails the test instead of the binary.
func execCell(t *testing.T, ses sandbox.Session, cell sandbox.Cell) (sandbox.Result, error) {
	t.Helper()
	type outcome struct {
		res sandbox.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := ses.Exec(context.Background(), cell)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(runTimeout):
		t.Errorf("Exec did not return within %s (the cell's wall limit is %dms): closing the session", runTimeout, cell.TimeoutMS)
		_ = ses.Close()
		o := <-done
		return o.res, o.err
	}
}

// describeCell shows a cell's Result in a failure message.
func describeCell(res sandbox.Result) string {
	return "status " + string(res.Status) + " (reason " + strconv.Quote(res.Reason) + "), value " + strconv.Quote(res.Value) +
		", stdout " + strconv.Quote(clip(res.Stdout)) + ", stderr " + strconv.Quote(clip(res.Stderr))
}

// testSessionIdleCPU: a cell leaves a busy thread and a busy child
// behind; in the two seconds before the next cell they must not use CPU
// that no cell is billed for. The next cell measures, inside the sandbox,
// what both used meanwhile: next to nothing (the session was held), or no
// more than that cell's CPU time (the session was billed for it). Closing
// the session ends the child.
func testSessionIdleCPU(t *testing.T, s *suite) {
	ses := s.sessionOf(t, sandbox.Limits{})
	token := newToken()
	s.remember(token)
	res, err := execCell(t, ses, sandbox.Cell{Code: `import os, subprocess, sys, threading
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
child = subprocess.Popen([sys.executable, '-c', 'while True: pass', '` + token + `'])
def used():
    with open('/proc/%d/stat' % child.pid) as f:
        ticks = sum(int(v) for v in f.read().rsplit(')', 1)[1].split()[11:13])
    own = os.times()
    return own.user + own.system + ticks / os.sysconf('SC_CLK_TCK')
start = used()`})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("the cell starting the spinners: %v %s", err, describeCell(res))
	}
	time.Sleep(2 * time.Second)
	res, err = execCell(t, ses, sandbox.Cell{Code: "used() - start"})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("the cell measuring the spinners: %v %s", err, describeCell(res))
	}
	used, perr := strconv.ParseFloat(res.Value, 64)
	if perr != nil {
		t.Fatalf("the measuring cell's value %q: %v", res.Value, perr)
	}
	const slack = 0.5 // seconds: the cells' own run, clock ticks
	t.Logf("the spinners used %.2fs between the cells; the next cell was billed %.0fms", used, res.Metrics.CPUMS)
	want := (used - slack) * 1000
	if s.sampledCPUClock {
		want /= 2
	}
	if used > slack && res.Metrics.CPUMS < want {
		t.Errorf("a busy thread and child used %.2fs of CPU in the 2s between two cells, and the next cell was billed %.0fms: "+
			"a session must not run unaccounted while no cell runs", used, res.Metrics.CPUMS)
	}
	if err := ses.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for i := 0; i < 40 && len(findProcesses(token)) > 0; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range findProcesses(token) {
		t.Errorf("after Close: the session's busy child is alive: %v", p)
	}
}

// testSessionForgedReply: a cell sends the kernel's reply for the next
// cell, during the cell and from a thread that sends it while no cell runs
// (or as the next cell starts). The next cell's value is never the forged
// one: the forgery ends the session, or is ignored.
func testSessionForgedReply(t *testing.T, s *suite) {
	forge := `__main__.send({"id": 2, "status": "ok", "value": "'forged'"}) if hasattr(__main__, 'send') else None`
	for _, tc := range []struct{ name, code string }{
		{"during the cell", "import __main__\n" + forge},
		{"from a thread", "import __main__, threading, time\ndef forge():\n    time.sleep(0.3)\n    " + forge +
			"\nthreading.Thread(target=forge, daemon=True).start()"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ses := s.sessionOf(t, sandbox.Limits{})
			if _, err := execCell(t, ses, sandbox.Cell{Code: tc.code}); err != nil {
				t.Fatalf("the forging cell: %v", err)
			}
			time.Sleep(time.Second)
			res, err := execCell(t, ses, sandbox.Cell{Code: "import time\ntime.sleep(0.5)\n'genuine'"})
			switch {
			case err != nil && !errors.Is(err, sandbox.ErrSessionClosed):
				t.Fatalf("the next cell: %v", err)
			case err == nil && res.Value == "'forged'":
				t.Errorf("the forged reply became the next cell's result: %s", describeCell(res))
			case err == nil && res.Status == sandbox.StatusOK && res.Value != "'genuine'":
				t.Errorf("the next cell's result is not its own: %s", describeCell(res))
			}
		})
	}
}

// testSessionForgedOutput: a cell writes what may end a cell's output (the
// end-of-cell marker of a kernel that uses one: its own, read from the
// request on the stack, and the next cell's, by a thread that finds it
// while that cell runs) followed by text. No later cell's output may start
// with that text or lose its own.
func testSessionForgedOutput(t *testing.T, s *suite) {
	ses := s.sessionOf(t, sandbox.Limits{})
	res, err := execCell(t, ses, sandbox.Cell{Code: `import sys, threading, time
def marker_of(frame, cell):
    while frame is not None:
        request = frame.f_locals.get('request')
        if isinstance(request, dict) and request.get('id', cell) == cell:
            return request.get('marker', '')
        frame = frame.f_back
    return None
def forge():
    for _ in range(300):
        for frame in list(sys._current_frames().values()):
            marker = marker_of(frame, 3)
            if marker is not None:
                sys.stdout.write(marker + 'tail\n')
                sys.stdout.flush()
                return
        time.sleep(0.01)
threading.Thread(target=forge, daemon=True).start()
sys.stdout.write((marker_of(sys._getframe(), 1) or '') + 'injected\n')`})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("the forging cell: %v %s", err, describeCell(res))
	}
	for _, cell := range []struct {
		code, own string
		exact     bool // false: the thread writes while this cell runs
	}{
		{"print('second')", "second\n", true},
		{"import time\ntime.sleep(0.5)\nprint('third')", "third\n", false},
		{"print('fourth')", "fourth\n", true},
	} {
		res, err := execCell(t, ses, sandbox.Cell{Code: cell.code})
		if err != nil || res.Status != sandbox.StatusOK {
			t.Fatalf("cell %q: %v %s", cell.code, err, describeCell(res))
		}
		if !strings.Contains(string(res.Stdout), cell.own) {
			t.Errorf("cell %q: stdout %q lost the cell's own output", cell.code, res.Stdout)
		} else if cell.exact && string(res.Stdout) != cell.own {
			t.Errorf("cell %q: stdout %q, want %q: an earlier cell's output leaked into it", cell.code, res.Stdout, cell.own)
		}
	}
}

// testSessionBrokenChannel: a cell that ignores interrupts breaks the
// kernel's reply channel (a line longer than any reply, on the reply file)
// and spins, beside a busy child. It must still end, its session with it:
// the next cell is refused and closing the session leaves no process.
func testSessionBrokenChannel(t *testing.T, s *suite) {
	ses := s.sessionOf(t, sandbox.Limits{})
	token := newToken()
	s.remember(token)
	res, err := execCell(t, ses, sandbox.Cell{TimeoutMS: 3000, Code: `import __main__, os, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
subprocess.Popen([sys.executable, '-c', 'while True: pass', '` + token + `'])
if hasattr(__main__, 'REPLIES'):
    os.write(__main__.REPLIES.fileno(), b'x' * (65 << 20))
while True:
    pass`})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if res.Status == sandbox.StatusOK {
		t.Errorf("the cell that broke the channel: %s, want it stopped", describeCell(res))
	}
	res, err = execCell(t, ses, sandbox.Cell{Code: "'after'"})
	if !errors.Is(err, sandbox.ErrSessionClosed) {
		t.Errorf("the next cell: %v %s, want ErrSessionClosed", err, describeCell(res))
	}
	// A service may have dropped the dead session already.
	if err := ses.Close(); err != nil && !errors.Is(err, sandbox.ErrSessionClosed) {
		t.Errorf("Close: %v", err)
	}
	for i := 0; i < 40 && len(findProcesses(token)) > 0; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range findProcesses(token) {
		t.Errorf("after Close: the session's busy child is alive: %v", p)
	}
}
