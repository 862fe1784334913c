package eval

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// Problem is one benchmark task in the HumanEval format.
type Problem struct {
	// TaskID names the problem, such as "HumanEval/0".
	TaskID string `json:"task_id"`
	// Prompt is the code the completion continues: a signature and
	// docstring.
	Prompt string `json:"prompt"`
	// EntryPoint is the function the tests call.
	EntryPoint string `json:"entry_point"`
	// Test defines check(candidate), which asserts on the function.
	Test string `json:"test"`
	// CanonicalSolution is the reference completion, if the file has one.
	CanonicalSolution string `json:"canonical_solution,omitempty"`
	// Line is where the problem was read.
	Line int `json:"-"`
}

// identifierRE is a Python identifier (ASCII); the entry point is placed
// into the program text, so nothing else may pass.
var identifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// LoadProblems reads a JSON-lines problem file. Any malformed line, missing
// field or duplicate task_id is an error naming the file and line.
func LoadProblems(path string) ([]Problem, error) {
	var problems []Problem
	seen := map[string]int{}
	err := readJSONL(path, func(line int, f map[string]json.RawMessage) error {
		p := Problem{Line: line}
		for _, field := range []struct {
			name     string
			dst      *string
			required bool
		}{
			{"task_id", &p.TaskID, true}, {"prompt", &p.Prompt, true}, {"entry_point", &p.EntryPoint, true},
			{"test", &p.Test, true}, {"canonical_solution", &p.CanonicalSolution, false},
		} {
			v, _, err := stringField(f, field.name, field.required)
			if err != nil {
				return &LineError{path, line, err.Error()}
			}
			*field.dst = v
		}
		if p.TaskID == "" {
			return &LineError{path, line, `field "task_id" must not be empty`}
		}
		if !identifierRE.MatchString(p.EntryPoint) {
			return &LineError{path, line, fmt.Sprintf("field \"entry_point\" must be a Python identifier, got %q", p.EntryPoint)}
		}
		if first, dup := seen[p.TaskID]; dup {
			return &LineError{path, line, fmt.Sprintf("task_id %q already defined at line %d", p.TaskID, first)}
		}
		seen[p.TaskID] = line
		problems = append(problems, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(problems) == 0 {
		return nil, fmt.Errorf("%s: no problems", path)
	}
	return problems, nil
}
