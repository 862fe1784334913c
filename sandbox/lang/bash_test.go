package lang

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

func TestParseBashError(t *testing.T) {
	const main = "/code/main.sh"
	retry := main + ": fork: retry: Resource temporarily unavailable\n"
	tests := []struct {
		name   string
		stderr string
		want   *sandbox.ExecError // nil: none
	}{
		{"retrying", retry + retry, &sandbox.ExecError{Type: "fork", Message: "Resource temporarily unavailable", Traceback: retry[:len(retry)-1]}},
		{"gave up, with a line", retry + main + ": line 3: fork: Resource temporarily unavailable\n",
			&sandbox.ExecError{Type: "fork", Message: "Resource temporarily unavailable", Line: 3, Traceback: main + ": line 3: fork: Resource temporarily unavailable"}},
		{"retried, then interrupted", retry + main + ": fork: Interrupted system call\n",
			&sandbox.ExecError{Type: "fork", Message: "Resource temporarily unavailable", Traceback: retry[:len(retry)-1]}},
		{"a line of another script", "bash: line 9: fork: Resource temporarily unavailable\n",
			&sandbox.ExecError{Type: "fork", Message: "Resource temporarily unavailable", Traceback: "bash: line 9: fork: Resource temporarily unavailable"}},
		{"other errors", main + ": line 1: nope: command not found\n", nil},
		{"the words in output", "echo fork: retry: Resource temporarily unavailable\n", nil},
		{"nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseBashError([]byte(tt.stderr), main)
			switch {
			case tt.want == nil && got != nil:
				t.Errorf("got %+v, want none", got)
			case tt.want != nil && (got == nil || *got != *tt.want):
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
