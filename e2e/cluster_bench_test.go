package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// localExecMedian is BenchmarkLocalExec's median, for BenchmarkForwardedExec
// to compare with when both run (go test -bench 'Exec$' -run ^$ ./e2e/).
var localExecMedian time.Duration

// benchClusterExec starts two cluster nodes (a Postgres store, Debian's
// nats-server), opens a session on node A, and measures a one-line cell
// sent to it through node A itself (forwarded false) or through node B,
// which forwards it (true); it reports the median.
func benchClusterExec(b *testing.B, forwarded bool) time.Duration {
	testenv.Root(b)
	db := startPostgres(b)
	nats, _ := startNATSServer(b)
	a := startClusterNode(b, "node-a", db, nats)
	nb := startClusterNode(b, "node-b", db, nats)
	ctx := context.Background()
	sess, err := a.Client.NewSession(ctx, sandbox.SessionRequest{Image: "host"})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	via := a.Client.AttachSession(sess.ID())
	if forwarded {
		via = nb.Client.AttachSession(sess.ID())
	}
	exec := func() time.Duration {
		start := time.Now()
		res, err := via.Exec(ctx, sandbox.Cell{Code: "1"})
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("exec: %+v, %v", res, err)
		}
		return time.Since(start)
	}
	for range 20 { // warm both nodes' connections and the interpreter
		exec()
	}
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		lat = append(lat, exec())
	}
	b.StopTimer()
	slices.Sort(lat)
	median := lat[len(lat)/2]
	b.ReportMetric(float64(median.Microseconds())/1000, "median-ms")
	return median
}

// BenchmarkLocalExec measures a session's cell sent to the node that
// holds the session.
func BenchmarkLocalExec(b *testing.B) {
	localExecMedian = benchClusterExec(b, false)
}

// BenchmarkForwardedExec measures a session's cell sent to another node,
// which forwards it to the owner (cluster.Forwarder); after
// BenchmarkLocalExec in the same run, it prints the difference of the
// medians (the target: +1 ms or less).
func BenchmarkForwardedExec(b *testing.B) {
	fwd := benchClusterExec(b, true)
	if localExecMedian > 0 {
		diff := fwd - localExecMedian
		b.ReportMetric(float64(diff.Microseconds())/1000, "overhead-ms")
		fmt.Printf("forwarded exec median %v, local %v: %+.3f ms (×%.3f); target +1 ms or less\n", fwd, localExecMedian,
			float64(diff.Microseconds())/1000, float64(fwd)/float64(localExecMedian))
	}
}
