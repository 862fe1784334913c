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
)

// APIError is a request the server answered with a status other than 2xx.
// Code, Message, Field and Rule come from the API's JSON error body
// ({"error": {"code", "message", "field", "rule"}}). When the body is not
// such JSON (a proxy's error page, say), Code is empty and Message holds
// the start of the body, or the status text when the body is empty.
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
	var wire struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
			Rule    string `json:"rule"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &wire) == nil && wire.Error != nil && wire.Error.Code != "" {
		e.Code, e.Message, e.Field, e.Rule = wire.Error.Code, wire.Error.Message, wire.Error.Field, wire.Error.Rule
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
