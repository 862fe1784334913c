package sandboxtest

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Output handed to Request.OnOutput while the program runs.

// OutputRecorder is a sandbox.OutputFunc (its Record method) that keeps
// what it is given and notes every breach of the OutputFunc contract it can
// see: a call while another is in progress, a call after the run returned
// (as Returned marks), an empty chunk, an unknown stream. Runtimes' own
// tests use it for what the suite cannot reach, such as session cells.
type OutputRecorder struct {
	inCall     atomic.Bool
	overlapped atomic.Int32 // calls made while another was in progress

	mu       sync.Mutex
	stdout   bytes.Buffer
	stderr   bytes.Buffer
	first    time.Time // when the first chunk arrived
	returned bool      // the run has returned
	late     int       // calls made after the run returned
	bad      []string  // calls with an unknown stream or an empty chunk
}

// Record is the OutputFunc.
func (r *OutputRecorder) Record(stream sandbox.Stream, chunk []byte) {
	if r.inCall.CompareAndSwap(false, true) {
		defer r.inCall.Store(false)
	} else {
		r.overlapped.Add(1)
	}
	// Widens the window in which a concurrent call would be caught, and
	// makes the runtime wait for a slow OutputFunc.
	time.Sleep(time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first.IsZero() {
		r.first = time.Now()
	}
	if r.returned {
		r.late++
	}
	switch {
	case len(chunk) == 0:
		r.bad = append(r.bad, "an empty chunk of "+string(stream))
	case stream == sandbox.StreamStdout:
		r.stdout.Write(chunk)
	case stream == sandbox.StreamStderr:
		r.stderr.Write(chunk)
	default:
		r.bad = append(r.bad, "a chunk of unknown stream "+string(stream))
	}
}

// Returned marks the run (Run or Exec) returned: calls after it are
// breaches.
func (r *OutputRecorder) Returned() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.returned = true
}

// First returns when the first chunk arrived; zero if none did.
func (r *OutputRecorder) First() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

// Check fails t unless the recorder was called one call at a time, only
// before the run returned, and was given exactly res's output.
func (r *OutputRecorder) Check(t testing.TB, res sandbox.Result) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.overlapped.Load(); n > 0 {
		t.Errorf("OnOutput was called %d times while another call was in progress", n)
	}
	if r.late > 0 {
		t.Errorf("OnOutput was called %d times after Run returned", r.late)
	}
	for _, b := range r.bad {
		t.Errorf("OnOutput was given %s", b)
	}
	if !bytes.Equal(r.stdout.Bytes(), res.Stdout) {
		t.Errorf("OnOutput got stdout %q, the Result has %q", clip(r.stdout.Bytes()), clip(res.Stdout))
	}
	if !bytes.Equal(r.stderr.Bytes(), res.Stderr) {
		t.Errorf("OnOutput got stderr %q, the Result has %q", clip(r.stderr.Bytes()), clip(res.Stderr))
	}
}

// runRecorded runs req with a recorder as its OnOutput and checks the
// recorder against the Result.
func (s *suite) runRecorded(t *testing.T, req sandbox.Request) (sandbox.Result, *OutputRecorder, time.Time) {
	t.Helper()
	rec := &OutputRecorder{}
	req.OnOutput = rec.Record
	res, _ := s.run(t, req, watch{token: newToken()})
	ended := time.Now()
	rec.Returned()
	rec.Check(t, res)
	return res, rec, ended
}

func testOnOutput(t *testing.T, s *suite) {
	t.Run("while running", func(t *testing.T) {
		// The first line is followed by 450ms of sleep before the program
		// ends: a runtime that streams hands it over long before Run
		// returns, one that hands everything over at the end does not.
		code := `import sys, time
print("first", flush=True)
time.sleep(0.3)
for i in range(3):
    print("out", i, flush=True)
    print("err", i, file=sys.stderr, flush=True)
    time.sleep(0.05)
`
		res, rec, ended := s.runRecorded(t, sandbox.Request{Language: sandbox.Python, Code: code})
		wantExit(t, res, sandbox.StatusOK, 0)
		if want := "first\nout 0\nout 1\nout 2\n"; string(res.Stdout) != want {
			t.Errorf("stdout = %q, want %q", res.Stdout, want)
		}
		if want := "err 0\nerr 1\nerr 2\n"; string(res.Stderr) != want {
			t.Errorf("stderr = %q, want %q", res.Stderr, want)
		}
		switch ahead := ended.Sub(rec.First()); {
		case rec.First().IsZero():
			t.Errorf("OnOutput was never called")
		case ahead < 100*time.Millisecond:
			t.Errorf("the first chunk arrived %s before Run returned, want at least 100ms: the output was not streamed while the program slept", ahead)
		default:
			t.Logf("the first chunk arrived %s before Run returned", ahead.Round(time.Millisecond))
		}
	})
	t.Run("output limit", func(t *testing.T) {
		const limit = 16 * sandbox.KiB
		code := "import sys\nwhile True:\n    sys.stdout.write('o' * 999 + '\\n')\n    sys.stdout.flush()\n" +
			"    sys.stderr.write('e' * 999 + '\\n')\n    sys.stderr.flush()\n"
		res, _, _ := s.runRecorded(t, sandbox.Request{Language: sandbox.Python, Code: code,
			Limits: sandbox.Limits{OutputBytes: limit, WallTimeMS: 10_000}})
		wantStatus(t, res, sandbox.StatusOutputLimit)
		if n := len(res.Stdout) + len(res.Stderr); n != int(limit) {
			t.Errorf("len(stdout)+len(stderr) = %d, want exactly the limit %d", n, limit)
		}
		if strings.Trim(string(res.Stdout), "o\n") != "" || strings.Trim(string(res.Stderr), "e\n") != "" {
			t.Errorf("the streams are mixed up")
		}
	})
}
