package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// BenchmarkQueuedRun measures a stateless run sent to node A, whose one
// slot is kept busy, so that it goes to the cluster's queue and node B
// executes it, its output coming back through A. After each, untimed,
// the same run goes to B directly, which runs it on a free slot of its
// own: the median of the pairs' differences is the queue's overhead
// (target: +1 ms or less), and the ratio of the medians is printed.
func BenchmarkQueuedRun(b *testing.B) {
	testenv.Root(b)
	db := startPostgres(b)
	nats, _ := startNATSServer(b)
	start := func(id string, slots int) *server {
		return startServer(b, id, db, "--cluster", nats, "--node-id", id, "--image", "host", "--warm", "0",
			"--config", writeBenchConfig(b, slots))
	}
	na, nb := start("node-a", 1), start("node-b", 2)
	ctx := context.Background()
	sdk := func(s *server) *client.Client {
		c, err := client.New(s.URL, client.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}))
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	ca, cb := sdk(na), sdk(nb)
	if _, err := ca.RunAsync(ctx, sandbox.Request{Language: sandbox.Bash, Code: "sleep 3000", Limits: sandbox.Limits{WallTimeMS: 3_600_000}}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second) // A's slot is taken
	run := func(c *client.Client) time.Duration {
		begin := time.Now()
		res, err := c.CreateRun(ctx, sandbox.Request{Language: sandbox.Bash, Code: "echo hi"})
		if err != nil || res.Result.Status != sandbox.StatusOK {
			b.Fatalf("run: %+v, %v", res, err)
		}
		return time.Since(begin)
	}
	for range 10 {
		run(ca)
		run(cb)
	}
	benchPairs(b, "queued run (A busy, B executes)", "local run on B", func() time.Duration { return run(ca) }, func() time.Duration { return run(cb) })
}

// writeBenchConfig writes a serve --config giving slots run slots and
// returns its path.
func writeBenchConfig(b *testing.B, slots int) string {
	path := filepath.Join(b.TempDir(), "serve.json")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`{"max_concurrent": %d}`, slots)), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}
