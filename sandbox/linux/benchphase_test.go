package linux_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The latency benchmarks time their runs in phases, never interleaved: a
// phase is runs one after another, each timed from its start to its
// result. A zygote slot resets and re-forks after Run returns, and a pool
// refills in the background; a bare run between two sandboxed ones would
// give that work idle time the benchmark's name does not promise. So:
//
//   - b2b: the sandboxed runs truly back to back, each started when the
//     previous one's result arrived, nothing in between;
//   - bare: the same program without a sandbox, its own phase, started
//     once every pool is full again (nothing of the sandboxed phase still
//     running in the background);
//   - idle: each sandboxed run after an untimed wait for every pool to be
//     full, as a caller who pauses between runs (an agent thinking, a
//     person typing) sees it. Reported under its own names (idle_*), so
//     that it is not mistaken for the back-to-back figure.
//
// Each phase reports its median and 99th percentile; the ratios to bare
// are of the medians.

// phase is the latencies of one phase's runs.
type phase []time.Duration

// at returns the q-quantile of p, nearest rank.
func (p phase) at(q float64) time.Duration {
	s := slices.Clone(p)
	slices.Sort(s)
	return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
}

// p50 returns the median of p.
func (p phase) p50() time.Duration { return p.at(0.5) }

// report reports p's median and 99th percentile as name_p50_ms and
// name_p99_ms.
func (p phase) report(b *testing.B, name string) {
	b.ReportMetric(ms(p.p50()), name+"_p50_ms")
	b.ReportMetric(ms(p.at(0.99)), name+"_p99_ms")
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ratio returns the ratio of the medians of p and base.
func ratio(p, base phase) float64 { return float64(p.p50()) / float64(base.p50()) }

// poolHits is how many runs every pool of rt (pre-started, warm or zygote,
// warm sessions) has served.
func poolHits(rt *linux.Runtime) uint64 {
	return rt.PoolStats().Hits + rt.WarmStats().Hits + rt.WarmSessionStats().Hits
}

// hasPool says whether rt keeps any sandbox ready.
func hasPool(rt *linux.Runtime) bool {
	return rt.PoolStats().Size+rt.WarmStats().Size+rt.WarmSessionStats().Size > 0
}

// awaitPools waits until every pool of rt is full: no sandbox being built,
// no zygote slot being reset.
func awaitPools(tb testing.TB, rt *linux.Runtime) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, w, s := rt.PoolStats(), rt.WarmStats(), rt.WarmSessionStats()
		if p.Ready >= p.Size && w.Ready >= w.Size && s.Ready >= s.Size {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the pools did not fill within 2 minutes: prestart %+v, warm %+v, warm sessions %+v", p, w, s)
		}
		time.Sleep(time.Millisecond)
	}
}

// compareLatency times base's program as a stateless run on rt in the
// phases above, b.N runs each: b2b (the benchmark's loop), bare, and, if
// idle is set, idle. Every run must succeed with base's stdout. It reports each
// phase's p50 and p99, b2b_x_bare and idle_x_bare (the ratios of the
// medians), and b2b_pool_pct, the share of the back-to-back runs a pool
// served, if rt has one (the rest found none ready and built their own
// sandbox). Every idle run must be served by a pool.
func compareLatency(b *testing.B, rt *linux.Runtime, base bare, idle bool) {
	for range 3 { // untimed: the page cache, the first forks and refills
		base.run(b)
		awaitPools(b, rt)
		boxed(b, rt, base.code, base.want)
	}
	awaitPools(b, rt)
	hits := poolHits(rt)
	var b2b phase
	for b.Loop() {
		b2b = append(b2b, boxed(b, rt, base.code, base.want))
	}
	b2bServed := poolHits(rt) - hits
	n := b.N
	awaitPools(b, rt)
	var bareRuns phase
	for range n {
		bareRuns = append(bareRuns, base.run(b))
	}
	bareRuns.report(b, "bare")
	b2b.report(b, "b2b")
	b.ReportMetric(ratio(b2b, bareRuns), "b2b_x_bare")
	if hasPool(rt) {
		b.ReportMetric(100*float64(b2bServed)/float64(len(b2b)), "b2b_pool_pct")
	}
	if !idle {
		return
	}
	var idleRuns phase
	hits = poolHits(rt)
	for range n {
		awaitPools(b, rt)
		idleRuns = append(idleRuns, boxed(b, rt, base.code, base.want))
	}
	if served := poolHits(rt) - hits; served != uint64(n) {
		b.Fatalf("%d of %d runs after an idle gap were served by a pool", served, n)
	}
	idleRuns.report(b, "idle")
	b.ReportMetric(ratio(idleRuns, bareRuns), "idle_x_bare")
}
