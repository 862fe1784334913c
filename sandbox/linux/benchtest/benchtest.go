// Package benchtest is what Crucible's benchmarks of the native runtime
// share: timing in phases, waiting for full pools, and the bare
// interpreter they measure against. Only tests import it.
//
// A benchmark times its runs in phases, never interleaved: a phase is
// runs one after another, each timed from its start to its result. A
// zygote slot resets and re-forks after Run returns, and a pool refills
// in the background; a bare run between two sandboxed ones would give that
// work idle time the benchmark's name does not promise. So:
//
//   - b2b: the sandboxed runs truly back to back, each started when the
//     previous one's result arrived, nothing in between;
//   - bare: the same program without a sandbox, its own phase, started
//     once every pool is full again (nothing of the sandboxed phase still
//     running in the background);
//   - idle: each sandboxed run after an untimed wait for every pool to be
//     full, as a caller who pauses between runs (an agent thinking, a
//     person typing) sees it, reported under its own names (idle_*) so
//     that it is not mistaken for the back-to-back figure.
//
// Each phase reports its median and 99th percentile; the ratios to bare
// are of the medians.
package benchtest

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// Phase is the latencies of one phase's runs.
type Phase []time.Duration

// At returns the q-quantile of p (0 < q ≤ 1), nearest rank.
func (p Phase) At(q float64) time.Duration {
	s := slices.Clone(p)
	slices.Sort(s)
	return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
}

// P50 returns the median of p.
func (p Phase) P50() time.Duration { return p.At(0.5) }

// Report reports p's median and 99th percentile as name_p50_ms and
// name_p99_ms.
func (p Phase) Report(b *testing.B, name string) {
	b.ReportMetric(MS(p.P50()), name+"_p50_ms")
	b.ReportMetric(MS(p.At(0.99)), name+"_p99_ms")
}

// MS returns d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Ratio returns the ratio of the medians of p and base.
func Ratio(p, base Phase) float64 { return float64(p.P50()) / float64(base.P50()) }

// PoolHits is how many runs and sessions every pool of rt (pre-started,
// warm or zygote, warm sessions) has served.
func PoolHits(rt *linux.Runtime) uint64 {
	return rt.PoolStats().Hits + rt.WarmStats().Hits + rt.WarmSessionStats().Hits
}

// HasPool says whether rt keeps any sandbox ready.
func HasPool(rt *linux.Runtime) bool {
	return rt.PoolStats().Size+rt.WarmStats().Size+rt.WarmSessionStats().Size > 0
}

// AwaitPools waits until every pool of rt is full: no sandbox being built,
// no zygote slot being reset. It fails tb after 2 minutes.
func AwaitPools(tb testing.TB, rt *linux.Runtime) {
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

// Loop is a benchmark's timed phase: it times run once per iteration of
// b.Loop, after wait, if not nil, run untimed (a wait for full pools,
// for runs after an idle gap).
func Loop(b *testing.B, wait func(), run func() time.Duration) Phase {
	var p Phase
	for b.Loop() {
		if wait != nil {
			b.StopTimer()
			wait()
			b.StartTimer()
		}
		p = append(p, run())
	}
	return p
}

// Times is a phase after the timed one: run n times, one after another,
// after wait, if not nil, before each.
func Times(n int, wait func(), run func() time.Duration) Phase {
	p := make(Phase, 0, n)
	for range n {
		if wait != nil {
			wait()
		}
		p = append(p, run())
	}
	return p
}

// Compare reports p and base as name and baseName (Report) and the
// ratio of their medians as ratioName.
func Compare(b *testing.B, p Phase, name string, base Phase, baseName, ratioName string) {
	p.Report(b, name)
	base.Report(b, baseName)
	b.ReportMetric(Ratio(p, base), ratioName)
}
