package sandboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// tokenEnv is the variable through which every checked run carries its
// token, so that any process it starts can be recognised on the host.
const tokenEnv = "SANDBOXTEST_TOKEN"

// runTimeout bounds any single Run call of the suite: a runtime that hangs
// fails its test instead of the whole test binary.
const runTimeout = 60 * time.Second

// newToken returns a fresh marker: 15 characters, so that it fits in a
// process's comm (which holds 15) and so survives prctl(PR_SET_NAME).
func newToken() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "sbt" + hex.EncodeToString(b)
}

// watch says what a checked run must leave untouched on the host.
type watch struct {
	// token marks the run: it is in the request's environment and the
	// program puts it in the names of what it starts and writes.
	token string
	// paths are host paths the program tries to create: none may exist
	// after the run.
	paths []string
	// contentFiles are host files the program tries to modify: their
	// content must be the same after the run.
	contentFiles []string
	// expectSeen requires that a process carrying the token was seen on
	// the host while the run was in progress. It proves the after-check,
	// which looks for the same processes, is not vacuous.
	expectSeen bool
	// maxSeen, if set, receives the largest number of marked processes
	// seen at once during the run (with expectSeen).
	maxSeen *int
}

// program fills a program template: each {{KEY}} is replaced by vars[KEY].
func program(src string, vars map[string]string) string {
	var pairs []string
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v)
	}
	return strings.NewReplacer(pairs...).Replace(src)
}

// withToken returns req with the token added to its environment.
func withToken(req sandbox.Request, token string) sandbox.Request {
	env := maps.Clone(req.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[tokenEnv] = token
	req.Env = env
	return req
}

// run runs req, marked with w.token, between two looks at the host, and
// fails t for anything the run left behind. A Run error fails t at once.
func (s *suite) run(t *testing.T, req sandbox.Request, w watch) (sandbox.Result, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	return s.runCtx(t, ctx, req, w)
}

// runCtx is run with the caller's context.
func (s *suite) runCtx(t *testing.T, ctx context.Context, req sandbox.Request, w watch) (sandbox.Result, time.Duration) {
	t.Helper()
	s.remember(w.token)
	req = withToken(req, w.token)
	before := s.snapshot(t, w)

	// Watch for the run's processes while it runs (the positive control).
	var seen int
	machinery := false // a RunProcessFinder's processes seen (hostprocs.go)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if w.expectSeen {
		wg.Go(func() {
			tick := time.NewTicker(25 * time.Millisecond)
			defer tick.Stop()
			for {
				if n := len(findProcesses(w.token)); n > seen {
					seen = n
				}
				if !machinery && len(s.runProcesses(w.token)) > 0 {
					machinery = true
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
	}
	start := time.Now()
	res, err := s.rt.Run(ctx, req)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()

	t.Logf("status=%s exit=%d signal=%q reason=%q in %s (cpu %.0fms, peak %d KiB)",
		res.Status, res.ExitCode, res.Signal, res.Reason, elapsed.Round(time.Millisecond),
		res.Metrics.CPUMS, res.Metrics.PeakMemoryBytes>>10)
	if err != nil {
		t.Fatalf("Run returned error %v (status %s, stderr %q)", err, res.Status, clip(res.Stderr))
	}
	s.checkHost(t, before, w)
	if w.expectSeen {
		switch {
		case seen == 0 && machinery:
			t.Logf("no host process carries the token (the runtime's own kernel runs the program); the run's host processes were seen: the leftover check looks at them")
		case seen == 0:
			t.Errorf("positive control: no process carrying the token was ever seen on the host during the run; the leftover check proves nothing")
		default:
			t.Logf("host saw up to %d marked processes during the run", seen)
		}
		if w.maxSeen != nil {
			*w.maxSeen = seen
		}
	}
	return res, elapsed
}

// remember records a token for the suite's final leftover check.
func (s *suite) remember(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = append(s.tokens, token)
}

// wantStatus fails t unless res has the status, showing what the program
// printed to explain.
func wantStatus(t *testing.T, res sandbox.Result, want sandbox.Status) {
	t.Helper()
	if res.Status != want {
		t.Errorf("status = %s (reason %q, exit %d, signal %q), want %s\nstdout: %q\nstderr: %q",
			res.Status, res.Reason, res.ExitCode, res.Signal, want, clip(res.Stdout), clip(res.Stderr))
	}
}

// wantExit fails t unless res has the status and exit code.
func wantExit(t *testing.T, res sandbox.Result, status sandbox.Status, code int) {
	t.Helper()
	wantStatus(t, res, status)
	if res.ExitCode != code {
		t.Errorf("exit code = %d, want %d", res.ExitCode, code)
	}
}

// decodeReport decodes the JSON object a program printed as the last line
// of its stdout into v.
func decodeReport(t *testing.T, res sandbox.Result, v any) {
	t.Helper()
	out := strings.TrimSpace(string(res.Stdout))
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("the program's report is not JSON (%v)\nstdout: %q\nstderr: %q", err, clip(res.Stdout), clip(res.Stderr))
	}
}

// clip shortens output for a failure message.
func clip(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
