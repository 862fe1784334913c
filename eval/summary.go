package eval

import (
	"fmt"
	"math/big"
	"sort"
)

// Summary is the evaluation's outcome over all problems.
type Summary struct {
	// Problems and Samples count what was evaluated.
	Problems int `json:"problems"`
	Samples  int `json:"samples"`
	// Passed counts passing samples.
	Passed int `json:"passed"`
	// PassAtK maps "pass@k" to the mean unbiased estimate over problems,
	// for each requested k that every problem has enough samples for.
	PassAtK map[string]float64 `json:"pass_at_k"`
	// SkippedK lists requested k values some problem has fewer samples
	// than, as the reference harness does.
	SkippedK []int `json:"skipped_k,omitempty"`
	// Outcomes counts samples by outcome.
	Outcomes map[Outcome]int `json:"outcomes"`
}

// Summarize computes pass@k for each k in ks from per-sample results.
// Samples with OutcomeInternal count as not passing; samples never judged
// (an interrupted run) are counted as OutcomeNotRun and left out of each
// problem's n. Both make the evaluation incomplete.
func Summarize(problems []Problem, results []SampleResult, ks []int) Summary {
	s := Summary{Problems: len(problems), Samples: len(results), PassAtK: map[string]float64{}, Outcomes: map[Outcome]int{}}
	total, correct := map[string]int{}, map[string]int{}
	for _, r := range results {
		if r.Outcome == "" { // not judged (interrupted): not part of n
			s.Outcomes[OutcomeNotRun]++
			continue
		}
		total[r.TaskID]++
		s.Outcomes[r.Outcome]++
		if r.Passed {
			correct[r.TaskID]++
			s.Passed++
		}
	}
	sorted := append([]int(nil), ks...)
	sort.Ints(sorted)
	for _, k := range sorted {
		enough := true
		for _, p := range problems {
			if total[p.TaskID] < k {
				enough = false
				break
			}
		}
		if !enough {
			s.SkippedK = append(s.SkippedK, k)
			continue
		}
		sum := new(big.Rat)
		for _, p := range problems {
			sum.Add(sum, passAtK(total[p.TaskID], correct[p.TaskID], k))
		}
		mean, _ := sum.Quo(sum, big.NewRat(int64(len(problems)), 1)).Float64()
		s.PassAtK[fmt.Sprintf("pass@%d", k)] = mean
	}
	return s
}
