package eval

import (
	"encoding/json"
	"fmt"
)

// Sample is one model output for a problem: a Completion of its prompt, or
// a whole Solution program.
type Sample struct {
	// TaskID names the problem.
	TaskID string `json:"task_id"`
	// Completion continues the problem's prompt.
	Completion string `json:"completion,omitempty"`
	// Solution is a complete program defining the entry point; used
	// instead of prompt + completion.
	Solution string `json:"solution,omitempty"`
	// Index is the sample's position in its file (0-based).
	Index int `json:"-"`
	// Line is where the sample was read; 0 for canonical samples.
	Line int `json:"-"`
}

// LoadSamples reads a JSON-lines sample file and checks every sample
// against problems: an unknown task_id, a missing or doubled
// completion/solution, or a malformed line is an error naming the file and
// line. Nothing is skipped.
func LoadSamples(path string, problems []Problem) ([]Sample, error) {
	known := map[string]bool{}
	for _, p := range problems {
		known[p.TaskID] = true
	}
	var samples []Sample
	err := readJSONL(path, func(line int, f map[string]json.RawMessage) error {
		s := Sample{Index: len(samples), Line: line}
		var err error
		if s.TaskID, _, err = stringField(f, "task_id", true); err != nil {
			return &LineError{path, line, err.Error()}
		}
		if !known[s.TaskID] {
			return &LineError{path, line, fmt.Sprintf("task_id %q is not in the problems file", s.TaskID)}
		}
		completion, hasCompletion, err := stringField(f, "completion", false)
		if err != nil {
			return &LineError{path, line, err.Error()}
		}
		solution, hasSolution, err := stringField(f, "solution", false)
		if err != nil {
			return &LineError{path, line, err.Error()}
		}
		switch {
		case hasCompletion && hasSolution:
			return &LineError{path, line, `give "completion" or "solution", not both`}
		case !hasCompletion && !hasSolution:
			return &LineError{path, line, `missing field "completion" (or "solution" for a whole program)`}
		}
		s.Completion, s.Solution = completion, solution
		samples = append(samples, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("%s: no samples", path)
	}
	return samples, nil
}

// CanonicalSamples returns one sample per problem: its canonical solution.
// Every problem must have one.
func CanonicalSamples(problems []Problem) ([]Sample, error) {
	samples := make([]Sample, 0, len(problems))
	for i, p := range problems {
		if p.CanonicalSolution == "" {
			return nil, fmt.Errorf("problem %q (line %d) has no canonical_solution", p.TaskID, p.Line)
		}
		samples = append(samples, Sample{TaskID: p.TaskID, Completion: p.CanonicalSolution, Index: i})
	}
	return samples, nil
}

// checkCoverage returns an error when a problem has no sample: pass@k over
// a subset of the problems would silently mean something else.
func checkCoverage(problems []Problem, samples []Sample) error {
	have := map[string]bool{}
	for _, s := range samples {
		have[s.TaskID] = true
	}
	var missing []string
	for _, p := range problems {
		if !have[p.TaskID] {
			missing = append(missing, p.TaskID)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	shown := missing
	if len(shown) > 5 {
		shown = shown[:5]
	}
	return fmt.Errorf("%d of %d problems have no sample (%v...); give samples for every problem, or a problems file with only the attempted ones", len(missing), len(problems), shown)
}
