package linux_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// BenchmarkPolicyWarmRun is what the Python code policy costs a warm
// stateless run: a small program run from a warm sandbox of the
// single-run kind (Options.SingleRunWarm; a zygote slot serves no run
// under a policy) with the strict rules in warn mode (the kernel imports
// ast, parses and walks the program before running it), against the same
// program without rules. Two phases, each run after an untimed wait for
// the pool to be full: unchecked, then checked (the benchmark's loop).
// It reports each phase's p50 and x_unchecked, the ratio of the medians.
func BenchmarkPolicyWarmRun(b *testing.B) {
	rt := newRuntime(b, linux.Options{Warm: 1, SingleRunWarm: true})
	const code = "import json\nrows = [{'n': i, 'sq': i * i} for i in range(100)]\nprint(len(json.dumps(rows)))"
	rows := make([]string, 100)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"n": %d, "sq": %d}`, i, i*i)
	}
	want := fmt.Sprintf("%d\n", len("["+strings.Join(rows, ", ")+"]"))
	rules := codecheck.Strict().Rules(sandbox.PolicyWarn)
	run := func(r *sandbox.CodeRules) time.Duration {
		t := time.Now()
		res, err := rt.Run(context.Background(), sandbox.Request{Language: sandbox.Python, Code: code, Rules: r})
		took := time.Since(t)
		if err != nil || res.Status != sandbox.StatusOK || len(res.Findings) != 0 || string(res.Stdout) != want {
			b.Fatalf("run: %v, %s, findings %v, want stdout %q", err, describe(res), res.Findings, want)
		}
		return took
	}
	for range 2 { // untimed: the page cache, the first refills
		for _, r := range []*sandbox.CodeRules{nil, rules} {
			bt.AwaitPools(b, rt)
			run(r)
		}
	}
	hits := bt.PoolHits(rt)
	wait := func() { bt.AwaitPools(b, rt) }
	checked := bt.Loop(b, wait, func() time.Duration { return run(rules) })
	plain := bt.Times(b.N, wait, func() time.Duration { return run(nil) })
	if served := bt.PoolHits(rt) - hits; served != uint64(2*b.N) {
		b.Fatalf("%d of %d runs were served warm", served, 2*b.N)
	}
	b.ReportMetric(bt.MS(plain.P50()), "unchecked_p50_ms")
	b.ReportMetric(bt.MS(checked.P50()), "checked_p50_ms")
	b.ReportMetric(bt.Ratio(checked, plain), "x_unchecked")
}
