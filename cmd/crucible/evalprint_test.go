package main

import (
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/eval"
)

// Proves that `crucible eval`'s text summary says which pass@k it did not
// compute and why: how many problems have fewer samples than k, one of
// them with its count, and what to do; samples not run are said not to
// count.
func TestPrintEvalSummarySkippedK(t *testing.T) {
	problems := []eval.Problem{{TaskID: "HumanEval/0"}, {TaskID: "HumanEval/1"}}
	res := func(id string, passed bool) eval.SampleResult {
		o := eval.OutcomeFailed
		if passed {
			o = eval.OutcomePassed
		}
		return eval.SampleResult{TaskID: id, Outcome: o, Passed: passed}
	}
	for _, tc := range []struct {
		name      string
		results   []eval.SampleResult
		ks        []int
		want, not []string
	}{
		{"one sample each, the default k", []eval.SampleResult{res("HumanEval/0", true), res("HumanEval/1", false)}, []int{1, 10, 100},
			[]string{"pass@1    0.5000\n",
				"pass@10   not computed: 2 of 2 problems have fewer than 10 samples (HumanEval/0 has 1); pass@k needs at least k samples of every problem: add samples, or leave 10 out of --k\n",
				"pass@100  not computed: 2 of 2 problems have fewer than 100 samples (HumanEval/0 has 1);"},
			[]string{"not run"}},
		{"one problem short", []eval.SampleResult{res("HumanEval/0", true), res("HumanEval/0", true), res("HumanEval/1", false), {}}, []int{2},
			[]string{"pass@2    not computed: 1 of 2 problems have fewer than 2 samples (HumanEval/1 has 1);", "(the 1 samples not run are not counted)"},
			nil},
		{"nothing skipped", []eval.SampleResult{res("HumanEval/0", true), res("HumanEval/1", true)}, []int{1},
			[]string{"pass@1    1.0000\n"}, []string{"not computed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printEvalSummary(&b, evalReport{Summary: eval.Summarize(problems, tc.results, tc.ks)})
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("the summary lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tc.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("the summary holds %q:\n%s", w, b.String())
				}
			}
		})
	}
}
