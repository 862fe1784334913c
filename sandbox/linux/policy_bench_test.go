package linux_test

import (
	"context"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// BenchmarkPolicyWarmRun is what the Python code policy costs a warm
// stateless run: a small program run from a warm sandbox with the strict
// rules in warn mode (the kernel imports ast, parses and walks the
// program before running it), against the same program without rules,
// alternating in the same run. x_unchecked is the ratio of the latencies.
func BenchmarkPolicyWarmRun(b *testing.B) {
	rt := newRuntime(b, linux.Options{Warm: 1})
	const code = "import json\nrows = [{'n': i, 'sq': i * i} for i in range(100)]\nprint(len(json.dumps(rows)))"
	rules := codecheck.Strict().Rules(sandbox.PolicyWarn)
	run := func(r *sandbox.CodeRules) time.Duration {
		awaitWarm(b, rt)
		t := time.Now()
		res, err := rt.Run(context.Background(), sandbox.Request{Language: sandbox.Python, Code: code, Rules: r})
		if err != nil || res.Status != sandbox.StatusOK || len(res.Findings) != 0 {
			b.Fatalf("run: %+v, %v", res, err)
		}
		return time.Since(t)
	}
	var plain, checked time.Duration
	for b.Loop() {
		plain += run(nil)
		checked += run(rules)
	}
	n := float64(b.N)
	b.ReportMetric(float64(plain)/n/1e6, "unchecked_ms")
	b.ReportMetric(float64(checked)/n/1e6, "checked_ms")
	b.ReportMetric(float64(checked)/float64(plain), "x_unchecked")
}
