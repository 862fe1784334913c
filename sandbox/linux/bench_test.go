package linux_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The benchmarks below run `python3 -c 'print(1)'` through the native
// runtime and the same interpreter started bare (no sandbox, an empty
// environment, the same root filesystem: the host's), alternating the two
// in one loop so that both see the same machine. Each reports bare_ms,
// sandbox_ms and x_bare, the ratio of the two (lower is better); ns/op is
// one bare plus one sandboxed run.

var print1 = sandbox.Request{Language: sandbox.Python, Code: "print(1)"}

func newBenchRuntime(b *testing.B, opts linux.Options) *linux.Runtime {
	testenv.Root(b)
	rt, err := linux.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	for range 3 { // warm the page cache
		if _, err := rt.Run(context.Background(), print1); err != nil {
			b.Fatal(err)
		}
	}
	return rt
}

func runBare(b *testing.B) time.Duration {
	t := time.Now()
	cmd := exec.Command("/usr/bin/python3", "-c", "print(1)")
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil || string(out) != "1\n" {
		b.Fatalf("bare python: %q, %v", out, err)
	}
	return time.Since(t)
}

func runBoxed(b *testing.B, rt *linux.Runtime) time.Duration {
	t := time.Now()
	res, err := rt.Run(context.Background(), print1)
	if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "1\n" {
		b.Fatalf("sandboxed python: %+v, %v", res, err)
	}
	return time.Since(t)
}

func report(b *testing.B, bare, boxed time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(bare)/n/1e6, "bare_ms")
	b.ReportMetric(float64(boxed)/n/1e6, "sandbox_ms")
	b.ReportMetric(float64(boxed)/float64(bare), "x_bare")
}

// BenchmarkPrint1Cold builds every sandbox inside the timed run, back to
// back: what each run costs when nothing is prepared.
func BenchmarkPrint1Cold(b *testing.B) {
	rt := newBenchRuntime(b, linux.Options{})
	var bare, boxed time.Duration
	for b.Loop() {
		bare += runBare(b)
		boxed += runBoxed(b, rt)
	}
	report(b, bare, boxed)
}

// BenchmarkPrint1Prestart takes a sandbox built ahead of time: the latency
// a caller sees when runs are separated by idle time (an agent thinking, a
// person typing), which the pool uses to build replacements. Before each
// timed pair the benchmark waits, untimed, for the pool to be full again.
func BenchmarkPrint1Prestart(b *testing.B) {
	rt := newBenchRuntime(b, linux.Options{Prestart: 1})
	missesBefore := rt.PoolStats().Misses
	var bare, boxed time.Duration
	for b.Loop() {
		b.StopTimer()
		for st := rt.PoolStats(); st.Ready < st.Size; st = rt.PoolStats() {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		bare += runBare(b)
		boxed += runBoxed(b, rt)
	}
	if missed := rt.PoolStats().Misses - missesBefore; missed > 0 {
		b.Fatalf("%d timed runs missed the pool", missed)
	}
	report(b, bare, boxed)
}
