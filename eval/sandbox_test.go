package eval_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/crucible-sandbox/crucible/eval"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The tests in this file run real samples through the native runtime: they
// need root and the HumanEval data set, which lives outside the repository
// (testenv.Dataset).

// newRuntime returns a native runtime with prestart sandboxes, closed at the
// end of the test; it needs root.
func newRuntime(tb testing.TB, prestart int) *linux.Runtime {
	return newRuntimeWith(tb, linux.Options{Prestart: prestart})
}

// newRuntimeWith returns a native runtime of opts, closed at the end of
// the test; it needs root.
func newRuntimeWith(tb testing.TB, opts linux.Options) *linux.Runtime {
	tb.Helper()
	testenv.Root(tb)
	rt, err := linux.New(opts)
	if err != nil {
		tb.Fatalf("linux.New: %v", err)
	}
	tb.Cleanup(func() {
		if err := rt.Close(); err != nil {
			tb.Errorf("closing the runtime: %v", err)
		}
	})
	return rt
}

// loadProblems loads a problems file of the HumanEval data set.
func loadProblems(tb testing.TB, dir, name string) []eval.Problem {
	tb.Helper()
	problems, err := eval.LoadProblems(filepath.Join(dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return problems
}

// TestCanonicalSolutionsPass proves that the harness accepts correct code:
// every one of HumanEval's 164 canonical solutions, wrapped by Program with
// its guard line and sentinel, passes in the sandbox. A harness that
// rejects a reference solution (a wrong program layout, a sentinel check
// that misses, a sandbox that breaks some standard module) fails here.
func TestCanonicalSolutionsPass(t *testing.T) {
	rt := newRuntime(t, runtime.NumCPU())
	problems := loadProblems(t, testenv.Dataset(t, "humaneval"), "HumanEval.jsonl")
	if len(problems) != 164 {
		t.Fatalf("HumanEval.jsonl has %d problems, want 164", len(problems))
	}
	samples, err := eval.CanonicalSamples(problems)
	if err != nil {
		t.Fatal(err)
	}
	// The reference harness allows 3 s per sample; a loaded CI machine
	// running many samples at once can push a slow solution past that, so
	// allow 10 s: this test is about correctness, not speed.
	runner := &eval.Runner{Runtime: rt, Concurrency: runtime.NumCPU(), Limits: sandbox.Limits{WallTimeMS: 10_000}}
	results, err := runner.Run(context.Background(), problems, samples)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.Passed || r.Outcome != eval.OutcomePassed {
			t.Errorf("%s: canonical solution %s (status %s, exit %d, reason %q, error %+v)",
				r.TaskID, r.Outcome, r.Status, r.ExitCode, r.Reason, r.Error)
		}
	}
	sum := eval.Summarize(problems, results, []int{1})
	if got := sum.PassAtK["pass@1"]; got != 1 {
		t.Errorf("pass@1 = %v, want 1 (summary %+v)", got, sum)
	}
}

// TestExampleSamples proves the harness reproduces the reference harness on
// its example: pass@1 = 0.5, with each of the six samples judged for the
// right reason (a failing subprocess call, a sleep past the 3 s limit, a
// read of an empty stdin, and three correct bodies with different
// indentation).
func TestExampleSamples(t *testing.T) {
	rt := newRuntime(t, runtime.NumCPU())
	dir := testenv.Dataset(t, "humaneval")
	problems := loadProblems(t, dir, "example_problem.jsonl")
	samples, err := eval.LoadSamples(filepath.Join(dir, "example_samples.jsonl"), problems)
	if err != nil {
		t.Fatal(err)
	}
	runner := &eval.Runner{Runtime: rt, Concurrency: runtime.NumCPU(), Limits: sandbox.Limits{WallTimeMS: 3_000}}
	results, err := runner.Run(context.Background(), problems, samples)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		outcome eval.Outcome
		errType string // the exception, for failed samples
	}{
		{eval.OutcomeFailed, "FileNotFoundError"}, // check_output('rm -rf tmp'): no such program
		{eval.OutcomeTimeout, ""},                 // time.sleep(10)
		{eval.OutcomeFailed, "EOFError"},          // input() on an empty stdin
		{eval.OutcomePassed, ""},
		{eval.OutcomePassed, ""},
		{eval.OutcomePassed, ""},
	}
	if len(results) != len(want) {
		t.Fatalf("got %d results, want %d", len(results), len(want))
	}
	for i, w := range want {
		r := results[i]
		if r.Sample != i {
			t.Errorf("result %d is of sample %d", i, r.Sample)
		}
		if r.Outcome != w.outcome || r.Passed != (w.outcome == eval.OutcomePassed) {
			t.Errorf("sample %d: outcome %s (passed %v, reason %q, error %+v), want %s",
				i, r.Outcome, r.Passed, r.Reason, r.Error, w.outcome)
			continue
		}
		if w.errType != "" && (r.Error == nil || r.Error.Type != w.errType) {
			t.Errorf("sample %d: error %+v, want a %s", i, r.Error, w.errType)
		}
	}
	// Exactly 0.5: pass@k is computed with rationals. (A product of floats,
	// as in the reference harness, gives 0.4999999999999999 here.)
	sum := eval.Summarize(problems, results, []int{1})
	if got := sum.PassAtK["pass@1"]; got != 0.5 {
		t.Errorf("pass@1 = %v, want exactly 0.5", got)
	}
}

// TestCheatingSamplesFail proves that a sample cannot pass without the
// tests running to the end: each sample below defines a correct return1
// but then tries to end the program with status 0, to kill the interpreter,
// to disable check, or to forge or suppress the sentinel. A harness that
// trusts the exit code, or lacks the guard line before the tests, passes
// some of them. The control sample proves the problem can be passed.
func TestCheatingSamplesFail(t *testing.T) {
	rt := newRuntime(t, runtime.NumCPU())
	problems := loadProblems(t, testenv.Dataset(t, "humaneval"), "example_problem.jsonl")
	if len(problems) != 1 || problems[0].EntryPoint != "return1" {
		t.Fatalf("example_problem.jsonl: want the single problem return1, got %+v", problems)
	}
	id := problems[0].TaskID
	cases := []struct {
		name    string
		sample  eval.Sample
		outcome eval.Outcome
		errType string // the exception, if the sample must fail with one
	}{
		{"control", eval.Sample{Completion: "    return 1"}, eval.OutcomePassed, ""},
		{"sys.exit(0) before the tests",
			eval.Sample{Completion: "    return 1\nimport sys\nsys.exit(0)\n"}, eval.OutcomeFailed, ""},
		{"os._exit(0) in the body",
			eval.Sample{Completion: "    import os\n    os._exit(0)\n"}, eval.OutcomeFailed, ""},
		{"SIGKILL to itself in the body",
			eval.Sample{Completion: "    import os\n    os.kill(os.getpid(), 9)\n"}, eval.OutcomeKilled, ""},
		// Without the guard line the decorator would apply to check,
		// turning it into None; with it the program does not compile.
		{"dangling decorator deleting check",
			eval.Sample{Completion: "    return 1\n@lambda f: None\n"}, eval.OutcomeFailed, "SyntaxError"},
		// Without the guard line check would become a no-op and the
		// sentinel would print: the one cheat the exit code cannot reveal.
		{"dangling decorator making check a no-op",
			eval.Sample{Completion: "    return 1\n@lambda f: (lambda c: None)\n"}, eval.OutcomeFailed, "SyntaxError"},
		{"print replaced by a no-op",
			eval.Sample{Completion: "    return 1\nimport builtins\nbuiltins.print = lambda *a, **k: None\n"}, eval.OutcomeFailed, ""},
		{"fake sentinel, then exit 0",
			eval.Sample{Completion: "    print('CRUCIBLE-EVAL-PASSED-0000', flush=True)\n    import os\n    os._exit(0)\n"}, eval.OutcomeFailed, ""},
		{"solution that exits 0 before the tests",
			eval.Sample{Solution: "import sys\n\ndef return1():\n    return 1\n\nsys.exit(0)\n"}, eval.OutcomeFailed, ""},
	}
	samples := make([]eval.Sample, len(cases))
	for i, c := range cases {
		samples[i] = c.sample
		samples[i].TaskID, samples[i].Index = id, i
	}
	runner := &eval.Runner{Runtime: rt, Concurrency: runtime.NumCPU(), Limits: sandbox.Limits{WallTimeMS: 10_000}}
	results, err := runner.Run(context.Background(), problems, samples)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		r := results[i]
		if r.Outcome != c.outcome || r.Passed != (c.outcome == eval.OutcomePassed) {
			t.Errorf("%s: outcome %s (passed %v, status %s, exit %d, reason %q, error %+v), want %s",
				c.name, r.Outcome, r.Passed, r.Status, r.ExitCode, r.Reason, r.Error, c.outcome)
			continue
		}
		if c.errType != "" && (r.Error == nil || r.Error.Type != c.errType) {
			t.Errorf("%s: error %+v, want a %s", c.name, r.Error, c.errType)
		}
	}
}
