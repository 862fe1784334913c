package docker_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// gvisorSocketProgram queues data on loopback TCP connections nobody
// reads, well past the run's memory limit if nothing stops it, printing
// how much it has queued after every further MiB: the sentry may die at
// the limit within one connection's buffers, so a report per connection
// could come too late to show anything was queued.
const gvisorSocketProgram = `import socket
chunk, queued, reported, held = b"x" * 65536, 0, 0, []
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(512)
for _ in range(400):
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 20)
    c.connect(lst.getsockname())
    a, _ = lst.accept()  # never read
    a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    held += [c, a]
    c.setblocking(False)
    while True:
        try:
            queued += c.send(chunk)
        except OSError:
            break
        if queued - reported >= 1 << 20:
            reported = queued
            print("queued", queued, flush=True)
print("done", queued, flush=True)
`

// TestGVisorSocketMemory is what the conformance suite's SocketMemory
// guards, as it holds under gVisor: socket buffers a program fills over
// loopback are the sentry's memory, inside the run's memory limit. The
// host's socket memory (/proc/net/sockstat) must not grow by the limit,
// and a program that queues past the limit must end as memory_limit (or
// be stopped by the sentry's own buffer limits, status ok); the program's
// reports prove it did queue a good part of the limit (positive control).
func TestGVisorSocketMemory(t *testing.T) {
	rt := newRuntime(t, docker.GVisorRuntime)
	defer rt.Close()
	const limit = 128 * sandbox.MiB
	base, err := hostSocketPages()
	if err != nil {
		t.Fatalf("read /proc/net/sockstat: %v", err)
	}
	var mu sync.Mutex
	var peak, queued int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if p, err := hostSocketPages(); err == nil {
				mu.Lock()
				peak = max(peak, p)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: gvisorSocketProgram,
		Limits: sandbox.Limits{MemoryBytes: limit, WallTimeMS: 60_000, CPUTimeMS: 30_000},
		OnOutput: func(_ sandbox.Stream, chunk []byte) {
			for _, l := range strings.Split(string(chunk), "\n") {
				if f := strings.Fields(l); len(f) == 2 {
					if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
						mu.Lock()
						queued = max(queued, n)
						mu.Unlock()
					}
				}
			}
		}})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	grown := (peak - base) * int64(os.Getpagesize())
	t.Logf("wall %.0f ms; status %s (%s); the program queued at least %d MiB; host socket memory grew by %d MiB at most (limit %d MiB)",
		res.Metrics.WallMS, res.Status, res.Reason, queued>>20, grown>>20, limit>>20)
	if res.Status != sandbox.StatusMemoryLimit && res.Status != sandbox.StatusOK {
		t.Errorf("status %s (%s), want memory_limit (or ok: the sentry's buffer limits stopped the sends)", res.Status, res.Reason)
	}
	// The positive control: the program must have queued a good part of
	// the limit in socket buffers. The sentry, the interpreter and the
	// buffers share the limit, and what the program last reported may die
	// with the sentry, so a quarter (44 of 128 MiB was seen on a loaded
	// machine), not half.
	if queued < limit/4 {
		t.Errorf("the program reported %d MiB queued, want at least a quarter of the limit (%d MiB): the test proves nothing", queued>>20, limit>>22)
	}
	// The sentry's death ends the run: it must not wait for the wall-time
	// limit (it did, before supervise watched the container's stop).
	if res.Metrics.WallMS > 30_000 {
		t.Errorf("the run took %.0f ms of its 60000 ms wall-time limit: the sentry's end did not end it", res.Metrics.WallMS)
	}
	if grown > limit {
		t.Errorf("the host's socket memory grew by %d MiB during a run limited to %d MiB", grown>>20, limit>>20)
	}
}

// hostSocketPages returns the pages the host kernel holds for TCP and
// UDP socket buffers (the "mem" figures of /proc/net/sockstat).
func hostSocketPages() (int64, error) {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(l))
		if len(f) == 0 || (f[0] != "TCP:" && f[0] != "UDP:") {
			continue
		}
		for i := 1; i+1 < len(f); i++ {
			if f[i] == "mem" {
				n, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return 0, err
				}
				total += n
			}
		}
	}
	return total, nil
}
