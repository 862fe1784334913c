package lang

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// bashFork matches bash's report of a fork the kernel refused with EAGAIN
// (the run's process limit): "PATH: fork: retry: Resource temporarily
// unavailable" each time it retries, "PATH: fork: Resource temporarily
// unavailable" when it gives up; PATH is the script's, maybe followed by
// "line N: ".
var bashFork = regexp.MustCompile(`^([^:\n]*): (?:line (\d+): )?fork: (?:retry: )?(Resource temporarily unavailable)$`)

// BashForkType is the Type of the structured error ParseBashError returns.
const BashForkType = "fork"

// ParseBashError returns the structured error of a bash program that
// could not start a process, or nil: bash has no structured errors, and
// its other reports are lines that say what they mean, but a fork the
// kernel refused is retried, for up to some 15 seconds, before bash gives
// up, and the run often ends on its wall-time limit first: the error
// (Type BashForkType, Message the system's) says why, and a hint can say
// what to do (package hint). Line is set when bash gave the line, in
// mainPath.
func ParseBashError(stderr []byte, mainPath string) *sandbox.ExecError {
	lines := strings.Split(string(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		m := bashFork.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		e := &sandbox.ExecError{Type: BashForkType, Message: m[3], Traceback: lines[i]}
		if m[1] == mainPath && m[2] != "" {
			e.Line, _ = strconv.Atoi(m[2])
		}
		return e
	}
	return nil
}
