package linux_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The benchmarks in this file measure zygote slots (linux.Options.Warm, the default)
// against bare interpreters measured in the same run, as bench5_test.go
// does for warm sandboxes; each reports its ratio to bare as x_bare.

// median returns the median of ds.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkZygotePrint1 is the latency of stateless print(1) runs served
// by one zygote slot back to back (no wait between runs: the slot's reset
// after a run overlaps the caller's own work, here none), against a bare
// `python3 -c 'print(1)'` on the host, alternating the two: the medians
// and their ratio, x_bare (target: at most 0.15).
func BenchmarkZygotePrint1(b *testing.B) {
	rt := newRuntime(b, linux.Options{Warm: 1})
	base := bare{code: "print(1)", want: "1\n"}
	awaitWarm(b, rt)
	for range 3 { // untimed: the page cache, the first forks
		base.run(b)
		boxed(b, rt, base.code, base.want)
	}
	hits := rt.WarmStats().Hits
	var bareTook, boxedTook []time.Duration
	for b.Loop() {
		bareTook = append(bareTook, base.run(b))
		boxedTook = append(boxedTook, boxed(b, rt, base.code, base.want))
	}
	if st := rt.WarmStats(); st.Hits-hits != uint64(b.N) {
		b.Fatalf("%d of %d timed runs were served by the zygote slot: %+v", st.Hits-hits, b.N, st)
	}
	bm, zm := median(bareTook), median(boxedTook)
	b.ReportMetric(float64(bm)/1e6, "bare_p50_ms")
	b.ReportMetric(float64(zm)/1e6, "sandbox_p50_ms")
	b.ReportMetric(float64(zm)/float64(bm), "x_bare")
}

// throughput runs op from clients goroutines at once, n times in all, and
// returns the rate in runs per second.
func throughput(clients, n int, op func()) float64 {
	var wg sync.WaitGroup
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for range work {
				op()
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// compareThroughput measures, with clients at once, the rate of runs of
// base's program served by rt's zygote slots against that of base run
// bare, the same number of runs each (b.N, at least 4 per client), and
// reports both and their ratio, x_bare.
func compareThroughput(b *testing.B, rt *linux.Runtime, base bare, clients int) {
	awaitWarm(b, rt)
	for range clients { // untimed: the page cache, the first forks
		base.run(b)
		boxed(b, rt, base.code, base.want)
	}
	awaitWarm(b, rt)
	hits := rt.WarmStats().Hits
	n := max(b.N, 4*clients)
	boxedRate := throughput(clients, n, func() { boxed(b, rt, base.code, base.want) })
	served := rt.WarmStats().Hits - hits
	bareRate := throughput(clients, n, func() { base.run(b) })
	b.ReportMetric(boxedRate, "sandbox_runs_per_s")
	b.ReportMetric(bareRate, "bare_runs_per_s")
	b.ReportMetric(boxedRate/bareRate, "x_bare")
	b.ReportMetric(100*float64(served)/float64(n), "zygote_%")
}

// BenchmarkZygoteThroughput is the rate of stateless print(1) runs from 2
// and from 8 clients at once, on a runtime keeping one zygote slot per
// client, against as many bare `python3 -c 'print(1)'` from as many
// clients at once (target: x_bare at least 1.5).
func BenchmarkZygoteThroughput(b *testing.B) {
	for _, clients := range []int{2, 8} {
		b.Run(map[int]string{2: "2_clients", 8: "8_clients"}[clients], func(b *testing.B) {
			rt := newRuntime(b, linux.Options{Warm: clients})
			compareThroughput(b, rt, bare{code: "print(1)", want: "1\n"}, clients)
		})
	}
}

// BenchmarkZygotePandas is the rate of a small pandas program (import
// pandas, a DataFrame's sum) from 2 clients at once, served by two zygote
// slots of the data-science image with pandas preloaded, against the same
// program in bare interpreters chrooted into the image, which import
// pandas themselves, from 2 clients at once (target: x_bare at least 20).
func BenchmarkZygotePandas(b *testing.B) {
	img := testenv.Image(b, "datascience")
	opts := imageOptions(img)
	opts.Warm = 2
	rt := newRuntime(b, opts)
	compareThroughput(b, rt, bare{
		root: img.RootFS,
		code: "import pandas as pd; print(pd.DataFrame({'a': [1, 2]}).sum())",
		want: "a    3\ndtype: int64\n",
	}, 2)
}

// BenchmarkIdleZygoteMemory is the memory an idle zygote slot holds (host
// root filesystem, nothing preloaded; after one run, so that the zygote
// is as it idles between runs): init, the zygote and its fork waiting for
// the next run together, against a bare interpreter idling in time.sleep:
// RSS and PSS (which divides the pages the zygote and its fork share
// between them), and their differences (target: pss_delta_mib at most +2).
func BenchmarkIdleZygoteMemory(b *testing.B) {
	rt := newRuntime(b, linux.Options{Warm: 1, Preload: []string{}})
	awaitWarm(b, rt)
	boxed(b, rt, "print(1)", "1\n")
	awaitWarm(b, rt)
	compareIdleMemory(b, 3, "the idle zygote slot", "init, the zygote and its fork")
}
