package linux_test

import (
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox/linux"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// compareLatency times base's program as a stateless run on rt in the
// phases package benchtest describes, b.N runs each: b2b (the benchmark's
// loop), bare, and, if idle is set, idle. Every run must succeed with
// base's stdout. It reports each phase's p50 and p99, b2b_x_bare and idle_x_bare (the ratios of the
// medians), and b2b_pool_pct, the share of the back-to-back runs a pool
// served, if rt has one (the rest found none ready and built their own
// sandbox). Every idle run must be served by a pool.
func compareLatency(b *testing.B, rt *linux.Runtime, base bt.Bare, idle bool) {
	for range 3 { // untimed: the page cache, the first forks and refills
		base.Run(b)
		bt.AwaitPools(b, rt)
		boxed(b, rt, base.Code, base.Want)
	}
	bt.AwaitPools(b, rt)
	hits := bt.PoolHits(rt)
	run := func() time.Duration { return boxed(b, rt, base.Code, base.Want) }
	b2b := bt.Loop(b, nil, run)
	b2bServed := bt.PoolHits(rt) - hits
	bt.AwaitPools(b, rt)
	bareRuns := bt.Times(b.N, nil, func() time.Duration { return base.Run(b) })
	bt.Compare(b, b2b, "b2b", bareRuns, "bare", "b2b_x_bare")
	if bt.HasPool(rt) {
		b.ReportMetric(100*float64(b2bServed)/float64(len(b2b)), "b2b_pool_pct")
	}
	if !idle {
		return
	}
	hits = bt.PoolHits(rt)
	idleRuns := bt.Times(b.N, func() { bt.AwaitPools(b, rt) }, run)
	if served := bt.PoolHits(rt) - hits; served != uint64(b.N) {
		b.Fatalf("%d of %d runs after an idle gap were served by a pool", served, b.N)
	}
	idleRuns.Report(b, "idle")
	b.ReportMetric(bt.Ratio(idleRuns, bareRuns), "idle_x_bare")
}
