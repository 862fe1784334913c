package swe

import (
	"fmt"
	"strings"
)

// SelectBenchTasks narrows tasks: only, when set, keeps the tasks of
// those names (in tasks' order; an unknown name is an error naming it
// and the known ones); then n > 0 keeps the first n. n < 0 is an error.
func SelectBenchTasks(tasks []BenchTask, n int, only []string) ([]BenchTask, error) {
	if n < 0 {
		return nil, fmt.Errorf("tasks: must be at least 1 (0 for all), got %d", n)
	}
	if len(only) > 0 {
		want := map[string]bool{}
		for _, name := range only {
			want[name] = true
		}
		var kept []BenchTask
		for _, t := range tasks {
			if want[t.Name] {
				kept = append(kept, t)
				delete(want, t.Name)
			}
		}
		if len(want) > 0 {
			names := make([]string, len(tasks))
			for i, t := range tasks {
				names[i] = t.Name
			}
			var unknown []string
			for _, name := range only {
				if want[name] {
					unknown = append(unknown, name)
					delete(want, name)
				}
			}
			return nil, fmt.Errorf("only: no task named %s; the tasks are %s", strings.Join(unknown, ", "), strings.Join(names, ", "))
		}
		tasks = kept
	}
	if n > 0 && n < len(tasks) {
		tasks = tasks[:n]
	}
	return tasks, nil
}
