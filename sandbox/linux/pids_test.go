package linux

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// forkCounter is a Python program that forks children that stay alive,
// as fast as it can, until fork fails; it counts its processes (itself
// and its children) at that moment: "first". Then it keeps trying, for up
// to 5 s, and counts again once fork fails for good after that: "settled".
const forkCounter = `import errno, json, os, time
r, w = os.pipe()
alive = 1
def fork_until_refused():
    global alive
    while True:
        try:
            pid = os.fork()
        except OSError as e:
            if e.errno != errno.EAGAIN:
                raise
            return
        if pid == 0:
            os.close(w)
            os.read(r, 1)  # wait until the parent exits
            os._exit(0)
        alive += 1
fork_until_refused()
first = alive
end = time.time() + 5
while time.time() < end:
    time.sleep(0.02)
    fork_until_refused()
print(json.dumps({"first": first, "settled": alive}), flush=True)
`

// TestProcessesExactWhileHostIsSlow proves limits.processes holds from the
// program's first fork, not only once the host has moved init out of the
// run's cgroup: with the host stalled for half a second between init's
// "started" event and that move, a program forking as fast as it can
// never has more than limits.processes processes, and once init has left
// it can have exactly that many.
func TestProcessesExactWhileHostIsSlow(t *testing.T) {
	testenv.Root(t)
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"fresh", Options{}},
		{"prestart", Options{Prestart: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := New(tc.opts)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer rt.Close()
			if tc.opts.Prestart > 0 {
				waitPool(t, rt)
			}
			testHookStarted = func() { time.Sleep(500 * time.Millisecond) }
			defer func() { testHookStarted = nil }()
			const processes = 8
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: forkCounter,
				Limits: sandbox.Limits{Processes: processes, WallTimeMS: 20_000}})
			if err != nil || res.Status != sandbox.StatusOK {
				t.Fatalf("Run: %v; status %s (%s), stdout %q, stderr %q", err, res.Status, res.Reason, res.Stdout, res.Stderr)
			}
			var got struct{ First, Settled int }
			if err := json.Unmarshal([]byte(strings.TrimSpace(string(res.Stdout))), &got); err != nil {
				t.Fatalf("stdout %q: %v", res.Stdout, err)
			}
			t.Logf("processes alive when fork first failed: %d; after init left the cgroup: %d; limit %d", got.First, got.Settled, processes)
			if got.First > processes {
				t.Errorf("the program had %d processes before the host moved init out of its cgroup, above limits.processes = %d", got.First, processes)
			}
			if got.Settled != processes {
				t.Errorf("the program could have %d processes once init had left its cgroup, want exactly limits.processes = %d", got.Settled, processes)
			}
		})
	}
}

// waitPool waits until rt's pool of pre-started sandboxes is full.
func waitPool(t *testing.T, rt *Runtime) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for rt.PoolStats().Ready < rt.PoolStats().Size {
		if time.Now().After(deadline) {
			t.Fatalf("the pool is not full after 30s: %+v", rt.PoolStats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
