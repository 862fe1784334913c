package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// APIError is a request the server answered with a status other than 2xx.
// Code, Message, Field and Rule come from the API's JSON error body
// ({"error": {"code", "message", "field", "rule"}}). When the body is not
// such JSON (a proxy's error page, say), Code is empty and Message holds
// the start of the body, or the status text when the body is empty.
//
// An APIError also answers as the execution contract's errors, so that code
// written against sandbox.Runtime and sandbox.Session handles a remote
// server like a local runtime:
//
//   - errors.As gives a *sandbox.InputError for a request the server
//     refused as invalid (code "invalid_request", or "payload_too_large"
//     for a body over its limit), with the APIError's Field and Rule; Field
//     is "body" when the server named none. sandbox.IsInputError reports it.
//   - errors.As gives a *sandbox.PlatformError, wrapping the APIError, for a
//     status of 500 or more: the server failed, not the caller.
//   - errors.Is(err, sandbox.ErrSessionClosed) holds for code
//     "session_closed" (410): the session was closed or expired.
type APIError struct {
	// Status is the HTTP status code, such as 400 or 429.
	Status int
	// Code is the API's stable error code, such as "invalid_request",
	// "not_found", "too_many_requests" or "session_closed".
	Code string
	// Message explains the error.
	Message string
	// Field names the offending request field or query parameter, such as
	// "language" or "files[2].name", when one is to blame.
	Field string
	// Rule is the rule Field breaks.
	Rule string
	// RetryAfter is how long the server asked to wait before retrying (its
	// Retry-After header, sent with 429 and 503); zero when it did not say.
	RetryAfter time.Duration
}

// Error returns the status, code and message, and the field when one is
// named.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "crucible: %d", e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	b.WriteString(": " + e.Message)
	if e.Field != "" {
		b.WriteString(" (field " + e.Field + ")")
	}
	return b.String()
}

// As makes errors.As find a *sandbox.InputError in a refused request and a
// *sandbox.PlatformError in a server failure; see APIError.
func (e *APIError) As(target any) bool {
	switch t := target.(type) {
	case **sandbox.InputError:
		if e.Code != api.CodeInvalidRequest && e.Code != api.CodePayloadTooLarge {
			return false
		}
		ie := &sandbox.InputError{Field: e.Field, Rule: e.Rule}
		if ie.Field == "" {
			ie.Field = "body"
		}
		if ie.Rule == "" {
			ie.Rule = e.Message
		}
		*t = ie
		return true
	case **sandbox.PlatformError:
		if e.Status < http.StatusInternalServerError {
			return false
		}
		*t = &sandbox.PlatformError{Op: "crucible server", Err: e}
		return true
	}
	return false
}

// Is reports whether e is what target names: sandbox.ErrSessionClosed for
// code "session_closed".
func (e *APIError) Is(target error) bool {
	return target == sandbox.ErrSessionClosed && e.Code == api.CodeSessionClosed
}

// IsNotFound reports whether err is, or wraps, an *APIError with status 404:
// no such run, session, file or endpoint.
func IsNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsTooManyRequests reports whether err is, or wraps, an *APIError with
// status 429: the run queue or the session table is full. Its RetryAfter
// says when to retry.
func IsTooManyRequests(err error) bool { return hasStatus(err, http.StatusTooManyRequests) }

func hasStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// Bounds of what readError reads of an error body and keeps of one that is
// not JSON.
const (
	maxErrorBody = 64 << 10
	maxClipped   = 512
)

// readError turns a non-2xx response into an *APIError.
func readError(resp *http.Response) *APIError {
	e := &APIError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var wire api.ErrorBody
	if json.Unmarshal(body, &wire) == nil && wire.Error.Code != "" {
		e.setError(wire.Error)
		return e
	}
	e.Message = clip(strings.TrimSpace(string(body)))
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// clip shortens s to at most maxClipped bytes, on a rune boundary, marking
// the cut.
func clip(s string) string {
	if len(s) <= maxClipped {
		return s
	}
	cut := maxClipped
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// retryAfter parses a Retry-After value, seconds or an HTTP date; zero when
// absent or invalid.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// setError copies the API's error description into e.
func (e *APIError) setError(w api.Error) {
	e.Code, e.Message, e.Field, e.Rule = w.Code, w.Message, w.Field, w.Rule
}
