package analyst

import (
	"context"
	"fmt"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// profilerModules is the cell that imports what the profiler needs
// (profile.py's imports beyond the standard library), binding no name in
// the session's namespace and leaving no value.
const profilerModules = `__import__("numpy"); __import__("pandas"); None`

// loadModules imports the profiler's modules in sess, in a cell of their
// own, before the profile: one that cannot says the session cannot hold
// an analysis, which is the request's doing, not the platform's. A
// module the image does not have is an input error naming "image"; an
// import that fails otherwise, or runs out of time or memory, one naming
// "limits" (numpy's math library starts a thread per CPU as it is
// imported, which a low limits.processes refuses). Only a failure of the
// session itself is the platform's.
func loadModules(ctx context.Context, sess sandbox.Session) error {
	res, err := sess.Exec(ctx, sandbox.Cell{Code: profilerModules, Unchecked: true})
	if err != nil {
		return err
	}
	switch res.Status {
	case sandbox.StatusOK:
		return nil
	case sandbox.StatusError:
		if res.Error != nil && res.Error.Type == "ModuleNotFoundError" {
			return &sandbox.InputError{Field: "image", Rule: "must have the Python modules numpy and pandas, which an analysis loads its data with (" + briefly(res.Error.Message) +
				"): name an image that has them, such as datascience, which `crucible image build` builds"}
		}
		if res.Error != nil {
			return &sandbox.InputError{Field: "limits", Rule: fmt.Sprintf("must let the session import numpy and pandas (%s: %s); leave limits.processes and limits.memory_bytes to their defaults or raise them",
				res.Error.Type, briefly(res.Error.Message))}
		}
	case sandbox.StatusTimeout, sandbox.StatusCPULimit, sandbox.StatusMemoryLimit, sandbox.StatusOutputLimit, sandbox.StatusKilled:
		return &sandbox.InputError{Field: "limits", Rule: "must let the session import numpy and pandas: " + res.Reason}
	}
	return &sandbox.PlatformError{Op: "import the profiler's modules", Err: fmt.Errorf("the cell ended %s: %s%s", res.Status, res.Reason, errorText(res))}
}

// briefly is an exception's message in a line: numpy's ImportError is a
// page of advice whose last line, "Original error was: ...", says what
// failed; any other message is cut to its first line.
func briefly(msg string) string {
	const original = "Original error was:"
	if i := strings.LastIndex(msg, original); i >= 0 {
		msg = msg[i+len(original):]
	}
	for line := range strings.SplitSeq(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return msg
}
