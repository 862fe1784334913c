package linux_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// The benchmarks in this file measure warm sandboxes and sessions against
// a baseline measured in the same run, in separate phases
// (package benchtest): the same interpreter started bare, with an empty
// environment, in the same root filesystem. Each reports the ratio as a
// metric (x_bare); ns/op is not the figure of interest.

// boxed runs code as a stateless Python run on rt, returning how long it
// took; it fails b unless the run ends ok with stdout want.
func boxed(b *testing.B, rt *linux.Runtime, code, want string) time.Duration {
	took, err := tryBoxed(rt, code, want)
	if err != nil {
		b.Fatal(err)
	}
	return took
}

// tryBoxed is boxed for any goroutine: it returns the failure instead.
func tryBoxed(rt *linux.Runtime, code, want string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	start := time.Now()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: code})
	took := time.Since(start)
	if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != want {
		return took, fmt.Errorf("sandboxed %q: %v, %s, want stdout %q", code, err, describe(res), want)
	}
	return took, nil
}

// BenchmarkWarmPrint1 is the latency of a stateless print(1) served by a
// warm sandbox of the single-run kind (Options.SingleRunWarm: one
// interpreter started ahead for each run, replaced after it), against a
// cold bare `python3 -c 'print(1)'` on the host, in phases
// (package benchtest). The target, idle_x_bare at most 0.2, is for runs
// that find the pool refilled; back to back (b2b) a run finds the
// replacement still starting and builds its own sandbox. ZygotePrint1
// measures the default kind, zygote slots.
func BenchmarkWarmPrint1(b *testing.B) {
	rt := newRuntime(b, linux.Options{Warm: 1, SingleRunWarm: true})
	compareLatency(b, rt, bt.Print1, true)
}

// BenchmarkWarmPandas is the latency of a small pandas program served by a
// zygote slot of the data-science image, pandas preloaded, against the
// same program in a bare interpreter chrooted into the same image, which
// imports pandas itself, in phases (package benchtest; target: b2b_x_bare
// at most 0.05).
func BenchmarkWarmPandas(b *testing.B) {
	img := testenv.Image(b, "datascience")
	opts := imageOptions(img)
	opts.Warm = 1
	rt := newRuntime(b, opts)
	compareLatency(b, rt, bt.Bare{
		Root: img.RootFS,
		Code: "import pandas as pd; print(pd.DataFrame({'a': [1, 2]}).sum())",
		Want: "a    3\ndtype: int64\n",
	}, true)
}

// BenchmarkWarmThroughput is the sustained rate of stateless print(1) runs
// back to back, one client, on a runtime keeping two warm sandboxes of
// the single-run kind (Options.SingleRunWarm: refills compete with the
// runs; a run that finds the pool empty is served cold), against as many
// bare interpreters run one after another, each bt.Phase started with every
// pool full (target: x_bare, the ratio of the rates, at least 1.5).
// ZygoteThroughput measures the default kind, zygote slots.
func BenchmarkWarmThroughput(b *testing.B) {
	rt := newRuntime(b, linux.Options{Warm: 2, SingleRunWarm: true})
	base := bt.Print1
	base.Run(b)
	boxed(b, rt, base.Code, base.Want)
	bt.AwaitPools(b, rt)
	hits := bt.PoolHits(rt)
	boxedRate := throughput(b, 1, b.N, func() (time.Duration, error) { return tryBoxed(rt, base.Code, base.Want) })
	served := bt.PoolHits(rt) - hits
	bt.AwaitPools(b, rt)
	bareRate := throughput(b, 1, b.N, base.Try)
	b.ReportMetric(boxedRate, "sandbox_runs_per_s")
	b.ReportMetric(bareRate, "bare_runs_per_s")
	b.ReportMetric(boxedRate/bareRate, "x_bare")
	b.ReportMetric(100*float64(served)/float64(b.N), "warm_pct")
	b.ReportMetric(1e9/boxedRate, "ns/op")
}

// BenchmarkSessionCell is the round trip of a trivial cell in a session,
// `x += 1`, reported as the median and 99th percentile (target: median at
// most 1 ms).
func BenchmarkSessionCell(b *testing.B) {
	s := newSession(b, newRuntime(b, linux.Options{}), sandbox.Limits{})
	execCode(b, s, "x = 0")
	ctx := context.Background()
	cell := sandbox.Cell{Code: "x += 1"}
	var took bt.Phase
	for b.Loop() {
		start := time.Now()
		res, err := s.Exec(ctx, cell)
		took = append(took, time.Since(start))
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("cell: %v, %s", err, describe(res))
		}
	}
	if res := execCode(b, s, "x"); res.Value != strconv.Itoa(len(took)) {
		b.Fatalf("after %d cells x = %s", len(took), res.Value)
	}
	b.ReportMetric(bt.MS(took.P50()), "p50_ms")
	b.ReportMetric(bt.MS(took.At(0.99)), "p99_ms")
}

// memory is the resident memory of a set of processes, in bytes.
type memory struct {
	rss, pss int64
	procs    int
}

// add counts process pid: VmRSS from its status, Pss from its
// smaps_rollup (shared pages divided among their users).
func (m *memory) add(b *testing.B, pid int) {
	rss := field(procStatus(pid), "VmRSS:")
	rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if rss < 0 || err != nil {
		b.Fatalf("process %d: no memory figures (%v)", pid, err)
	}
	m.rss += rss << 10
	m.pss += field(strings.Split(string(rollup), "\n"), "Pss:") << 10
	m.procs++
}

// field returns the number after name in lines such as "VmRSS: 8 kB" or
// "PPid: 1", or -1.
func field(lines []string, name string) int64 {
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == name {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return -1
}

// warmSandboxMemory measures the one idle warm sandbox of this process:
// every process descending from a sandbox init this process started
// (init, the kernel) and every process in one of this process's crucible
// cgroups.
func warmSandboxMemory(b *testing.B) memory {
	self := os.Getpid()
	parent := map[int]int{}
	var inits []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid := int(field(procStatus(pid), "PPid:"))
		parent[pid] = ppid
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if ppid == self && bytes.HasPrefix(cmdline, []byte(sandboxinit.Arg0)) {
			inits = append(inits, pid)
		}
	}
	if len(inits) != 1 {
		b.Fatalf("want exactly one sandbox init (the idle warm sandbox), found %v", inits)
	}
	inCgroups := map[int]bool{}
	for _, dir := range ownCgroups() {
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(procs)) {
			if pid, err := strconv.Atoi(f); err == nil {
				inCgroups[pid] = true
			}
		}
	}
	descends := func(pid int) bool {
		for p := pid; p > 1; p = parent[p] {
			if p == inits[0] {
				return true
			}
		}
		return false
	}
	var m memory
	for pid := range parent {
		if descends(pid) || inCgroups[pid] {
			m.add(b, pid)
		}
	}
	return m
}

// BenchmarkIdleWarmMemory is the memory an idle single-run warm Python
// sandbox (Options.SingleRunWarm; host root filesystem, nothing
// preloaded) holds, init and kernel together,
// against a bare interpreter idling in time.sleep: RSS, and PSS, which
// divides shared pages (init is this test binary, whose pages the host
// process shares) among their users (target: delta_mib at most +2).
func BenchmarkIdleWarmMemory(b *testing.B) {
	rt := newRuntime(b, linux.Options{Warm: 1, SingleRunWarm: true, Preload: []string{}})
	awaitWarm(b, rt)
	compareIdleMemory(b, 2, "the idle warm sandbox", "init and the kernel")
}

// compareIdleMemory reports the memory of the warm sandbox the runtime
// keeps idle (procs processes: want names them) against a bare
// interpreter idling in time.sleep: RSS and PSS, and their differences.
func compareIdleMemory(b *testing.B, procs int, what, want string) {
	idle := exec.Command("/usr/bin/python3", "-c", "import time; time.sleep(5)")
	idle.Env = []string{}
	if err := idle.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = idle.Process.Kill()
		_ = idle.Wait()
	})
	time.Sleep(time.Second) // the bare interpreter's start-up is over
	var box, base memory
	for b.Loop() {
		m := warmSandboxMemory(b)
		if m.procs != procs {
			b.Fatalf("%s has %d processes, want %s", what, m.procs, want)
		}
		box.rss, box.pss = box.rss+m.rss, box.pss+m.pss
		base.add(b, idle.Process.Pid)
	}
	mib := func(total int64) float64 { return float64(total) / float64(b.N) / (1 << 20) }
	b.ReportMetric(mib(box.rss), "sandbox_rss_mib")
	b.ReportMetric(mib(base.rss), "bare_rss_mib")
	b.ReportMetric(mib(box.rss-base.rss), "delta_mib")
	b.ReportMetric(mib(box.pss), "sandbox_pss_mib")
	b.ReportMetric(mib(base.pss), "bare_pss_mib")
	b.ReportMetric(mib(box.pss-base.pss), "pss_delta_mib")
}
