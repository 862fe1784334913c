package linux_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// The benchmarks in this file measure zygote slots (linux.Options.Warm, the default)
// against bare interpreters measured in the same run, in separate phases
// (package benchtest); each reports its ratio to bare as x_bare.

// BenchmarkZygotePrint1 is the latency of stateless print(1) runs served
// by one zygote slot, against a bare `python3 -c 'print(1)'` on the host
// (package benchtest). b2b: each run starts when the previous one's
// result arrived, so it waits for the slot's reset and re-fork, which
// run after Run returns (target: b2b_x_bare at most 0.15); idle: each run
// after the slot is ready again. Every idle run must be served by the
// slot; b2b_pool_pct is the share of the back-to-back ones it served.
func BenchmarkZygotePrint1(b *testing.B) {
	rt := newRuntime(b, linux.Options{Warm: 1})
	compareLatency(b, rt, bt.Print1, true)
}

// BenchmarkZygoteImagePrint1 is BenchmarkZygotePrint1 in a zygote slot
// of the data-science image, which preloads numpy, pandas and
// matplotlib.pyplot (hundreds of modules), against a bare
// `python3 -c 'print(1)'` chrooted into the image (target: b2b_x_bare at
// most 0.25, as the host image's).
func BenchmarkZygoteImagePrint1(b *testing.B) {
	img := testenv.Image(b, "datascience")
	opts := imageOptions(img)
	opts.Warm = 1
	rt := newRuntime(b, opts)
	compareLatency(b, rt, bt.Bare{Root: img.RootFS, Code: bt.Print1.Code, Want: bt.Print1.Want}, true)
}

// throughput runs op n times from clients goroutines at once and returns
// the rate in runs per second. It fails b if any run fails.
func throughput(b *testing.B, clients, n int, op func() (time.Duration, error)) float64 {
	var (
		wg     sync.WaitGroup
		failed atomic.Pointer[error]
	)
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for range work {
				if _, err := op(); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	rate := float64(n) / time.Since(start).Seconds()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	return rate
}

// throughputRuns is the number of runs of each phase of a throughput
// benchmark with clients at once: b.N, but at least 25 per client, so
// that the runs that find every slot ready at the phase's start are a
// small part of it.
func throughputRuns(b *testing.B, clients int) int { return max(b.N, 25*clients) }

// compareThroughput measures, with clients at once, the rate of runs of
// base's program served by rt's zygote slots against that of base run
// bare, throughputRuns each, in two phases, each started once every slot
// is ready (so that neither pays for the resets of the runs before it),
// and reports both rates, their ratio, x_bare, and the share of the
// sandboxed runs the slots served. Every run must succeed with base's
// stdout. ns/op is the sandboxed phase's time over its runs.
func compareThroughput(b *testing.B, rt *linux.Runtime, base bt.Bare, clients int) {
	bt.AwaitPools(b, rt)
	for range clients { // untimed: the page cache, the first forks
		base.Run(b)
		boxed(b, rt, base.Code, base.Want)
	}
	n := throughputRuns(b, clients)
	bt.AwaitPools(b, rt)
	hits := bt.PoolHits(rt)
	boxedRate := throughput(b, clients, n, func() (time.Duration, error) { return tryBoxed(rt, base.Code, base.Want) })
	served := bt.PoolHits(rt) - hits
	bt.AwaitPools(b, rt)
	bareRate := throughput(b, clients, n, base.Try)
	b.ReportMetric(boxedRate, "sandbox_runs_per_s")
	b.ReportMetric(bareRate, "bare_runs_per_s")
	b.ReportMetric(boxedRate/bareRate, "x_bare")
	b.ReportMetric(100*float64(served)/float64(n), "zygote_pct")
	b.ReportMetric(1e9/boxedRate, "ns/op")
}

// BenchmarkZygoteThroughput is the rate of stateless print(1) runs from 2
// and from 8 clients at once, on a runtime keeping one zygote slot per
// client, against as many bare `python3 -c 'print(1)'` from as many
// clients at once (target: x_bare at least 1.5).
func BenchmarkZygoteThroughput(b *testing.B) {
	for _, clients := range []int{2, 8} {
		b.Run(map[int]string{2: "2_clients", 8: "8_clients"}[clients], func(b *testing.B) {
			rt := newRuntime(b, linux.Options{Warm: clients})
			compareThroughput(b, rt, bt.Print1, clients)
		})
	}
}

// BenchmarkZygoteImageThroughput is BenchmarkZygoteThroughput's 2
// clients on two zygote slots of the data-science image (hundreds of
// modules preloaded), against as many bare `python3 -c 'print(1)'`
// chrooted into the image (target: x_bare at least 2).
func BenchmarkZygoteImageThroughput(b *testing.B) {
	img := testenv.Image(b, "datascience")
	opts := imageOptions(img)
	opts.Warm = 2
	rt := newRuntime(b, opts)
	compareThroughput(b, rt, bt.Bare{Root: img.RootFS, Code: bt.Print1.Code, Want: bt.Print1.Want}, 2)
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
	compareThroughput(b, rt, bt.Bare{
		Root: img.RootFS,
		Code: "import pandas as pd; print(pd.DataFrame({'a': [1, 2]}).sum())",
		Want: "a    3\ndtype: int64\n",
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
