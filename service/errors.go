package service

import (
	"fmt"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Kind classifies an *Error, so that each transport can answer it in its
// own terms (an HTTP status, an MCP error, an exit code).
type Kind int

// The kinds of Error. Anything the service returns that is not an *Error
// nor a *sandbox.InputError is a failure of the platform.
const (
	// KindNotFound: no such run, session or file for this tenant. Another
	// tenant's are reported the same way, so that IDs reveal nothing.
	KindNotFound Kind = iota + 1
	// KindSessionClosed: the session was closed, expired or its
	// interpreter ended.
	KindSessionClosed
	// KindTooLarge: the request's body is over the tenant's limit.
	KindTooLarge
	// KindBusy: a queue, the session table, the payload budget or the
	// tenant's fair share is full; retry later.
	KindBusy
	// KindUnavailable: the service is shutting down.
	KindUnavailable
	// KindWithheld: what was asked for holds a secret redaction hides and
	// cannot be redacted without corrupting it (a binary file).
	KindWithheld
	// KindConflict: the request contradicts the state of what it names,
	// such as an approval already decided.
	KindConflict
	// KindNotConfigured: the service is not set up for what was asked,
	// such as an agent run without a model; Field names the setting.
	KindNotConfigured
	// KindForbidden: the request is valid but the tenant may not make it,
	// such as a run with network when the server's config does not allow
	// the tenant network; Field names the part refused.
	KindForbidden
	// KindUnsuitableImage: the image the request names, or its default,
	// lacks what the request needs, such as an analysis in an image
	// without pandas; Field is "image" and the message names an image
	// that has it or how to build one.
	KindUnsuitableImage
)

// Error is a request the service refused for a reason the caller can act
// on. Bad input is reported as *sandbox.InputError instead.
type Error struct {
	// Kind says what went wrong.
	Kind Kind
	// Message explains it to a person.
	Message string
	// Field names the part of the request at fault, if one is.
	Field string
	// Rule is the rule Field breaks.
	Rule string
}

func (e *Error) Error() string { return e.Message }

func errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// invalid reports a request that breaks a rule of the service (rather
// than of the contract), naming the field.
func invalid(field, format string, args ...any) error {
	return &sandbox.InputError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

var (
	errShuttingDown = errorf(KindUnavailable, "the server is shutting down")
	errQueueFull    = errorf(KindBusy, "too many runs are queued; retry later")
)

// redactedError is an error whose text was redacted; errors.Is and As
// still see the error it wraps.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr returns err with its text redacted by r, when that changes
// it: a runtime's error may quote what the program did, and it reaches a
// model through an agent, or a log.
func redactErr(r *policy.Redactor, err error) error {
	if err == nil {
		return nil
	}
	msg, c := r.RedactString(err.Error())
	if c.Total() == 0 {
		return err
	}
	return &redactedError{msg: msg, err: err}
}
