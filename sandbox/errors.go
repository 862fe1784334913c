package sandbox

import (
	"errors"
	"fmt"
)

// InputError reports a request the caller got wrong. Nothing has run when a
// Runtime returns one. Field is the JSON path of the offending value (for
// example "limits.memory_bytes" or "files[2].name") and Rule says what it
// must satisfy.
type InputError struct {
	Field string `json:"field"`
	Rule  string `json:"rule"`
}

func (e *InputError) Error() string {
	return fmt.Sprintf("invalid request: %s: %s", e.Field, e.Rule)
}

// PlatformError reports that Crucible itself failed (a cgroup could not be
// created, the sandbox could not start, ...), never the user's code. A
// Runtime that returns one also returns a Result with StatusInternal.
type PlatformError struct {
	// Op is the step that failed, such as "create cgroup".
	Op  string
	Err error
}

func (e *PlatformError) Error() string {
	return "sandbox platform failure: " + e.Op + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *PlatformError) Unwrap() error { return e.Err }

// IsInputError reports whether err is, or wraps, an *InputError.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

func inputErrorf(field, format string, args ...any) *InputError {
	return &InputError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// ErrTooManySessions is returned when a runtime already holds as many
// sessions as it allows; close one, or wait for an idle one to expire.
var ErrTooManySessions = errors.New("too many sessions")

// ErrSessionClosed is returned by a session that was closed, expired, or
// whose interpreter ended.
var ErrSessionClosed = errors.New("session closed")
