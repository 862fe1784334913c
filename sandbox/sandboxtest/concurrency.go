package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Many runs at once, and a run cut short by its caller.

func testConcurrent(t *testing.T, s *suite) {
	const n = 50
	tok := newToken()
	s.remember(tok)
	before := s.snapshot(t, watch{token: tok})
	code := `import hashlib
n = {{N}}
h = hashlib.sha256(str(n).encode() * 10000).hexdigest()
total = sum(i * n for i in range(20000))
print(n, h[:12], total)
`
	type outcome struct {
		res sandbox.Result
		err error
	}
	outs := make([]outcome, n)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := withToken(sandbox.Request{
				Language: sandbox.Python,
				Code:     program(code, map[string]string{"N": strconv.Itoa(i)}),
				// Generous: 50 interpreters start at once on a small machine.
				Limits: sandbox.Limits{WallTimeMS: 30_000, CPUTimeMS: 10_000},
			}, tok)
			outs[i].res, outs[i].err = s.rt.Run(ctx, req)
		})
	}
	wg.Wait()
	t.Logf("%d concurrent runs took %s", n, time.Since(start).Round(time.Millisecond))
	for i, o := range outs {
		sum := sha256.Sum256([]byte(strings.Repeat(strconv.Itoa(i), 10000)))
		want := fmt.Sprintf("%d %s %d\n", i, hex.EncodeToString(sum[:])[:12], i*20000*19999/2)
		switch {
		case o.err != nil:
			t.Errorf("run %d: error %v (status %s)", i, o.err, o.res.Status)
		case o.res.Status != sandbox.StatusOK || string(o.res.Stdout) != want:
			t.Errorf("run %d: status %s (reason %q), stdout %q, want ok and %q (stderr %q)",
				i, o.res.Status, o.res.Reason, o.res.Stdout, want, clip(o.res.Stderr))
		}
	}
	s.checkHost(t, before, watch{token: tok})
}

func testCancel(t *testing.T, s *suite) {
	tok := newToken()
	code := program(`import subprocess, time
subprocess.Popen(["{{TOKEN}}", "10"], executable="/bin/sleep")
time.sleep(10)
print("not cancelled")
`, map[string]string{"TOKEN": tok})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the program is surely running: 200ms after the start
	// and once its sleep is visible on the host (or, for a runtime whose
	// programs the host cannot see, its run's exec: RunProcessFinder).
	cancelled := make(chan time.Time, 1)
	go func() {
		start := time.Now()
		time.Sleep(200 * time.Millisecond)
		for time.Since(start) < 10*time.Second && len(findProcesses(tok)) == 0 && len(s.runProcesses(tok)) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		cancelled <- time.Now()
		cancel()
	}()
	res, _ := s.runCtx(t, ctx, sandbox.Request{Language: sandbox.Python, Code: code,
		Limits: sandbox.Limits{WallTimeMS: 30_000}}, watch{token: tok, expectSeen: true})
	returned := time.Now()
	wantStatus(t, res, sandbox.StatusKilled)
	if len(res.Stdout) != 0 {
		t.Errorf("stdout = %q, want nothing: the program was cancelled mid-sleep", res.Stdout)
	}
	select {
	case at := <-cancelled:
		if d := returned.Sub(at); d > 2*time.Second {
			t.Errorf("Run returned %s after the context was cancelled, want promptly", d)
		}
	default:
		t.Errorf("Run returned before the context was cancelled")
	}
}
