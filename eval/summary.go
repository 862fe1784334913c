package eval

import (
	"fmt"
	"math/big"
	"slices"
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
	// than, as the reference harness does; Skipped says, for each, why.
	SkippedK []int  `json:"skipped_k,omitempty"`
	Skipped  []Skip `json:"skipped,omitempty"`
	// Outcomes counts samples by outcome.
	Outcomes map[Outcome]int `json:"outcomes"`
}

// Skip is why pass@K was not computed: pass@k needs at least k judged
// samples of every problem, and Short problems have fewer.
type Skip struct {
	K int `json:"k"`
	// Short counts the problems with fewer than K judged samples.
	Short int `json:"problems_short"`
	// Fewest is the fewest judged samples a problem has; Example names
	// the first problem with that many.
	Fewest  int    `json:"fewest_samples"`
	Example string `json:"example_task_id"`
}

// Reason says why pass@K was skipped, for a person.
func (s Skip) Reason(problems int) string {
	return fmt.Sprintf("%d of %d problems have fewer than %d samples (%s has %d)", s.Short, problems, s.K, s.Example, s.Fewest)
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
	for _, k := range slices.Compact(sorted) {
		skip := Skip{K: k, Fewest: k}
		for _, p := range problems {
			if n := total[p.TaskID]; n < k {
				skip.Short++
				if n < skip.Fewest {
					skip.Fewest, skip.Example = n, p.TaskID
				}
			}
		}
		if skip.Short > 0 {
			s.SkippedK = append(s.SkippedK, k)
			s.Skipped = append(s.Skipped, skip)
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
