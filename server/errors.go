package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// The stable error codes of the API.
const (
	codeInvalidRequest   = "invalid_request"
	codeUnauthorized     = "unauthorized"
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codePayloadTooLarge  = "payload_too_large"
	codeTooManyRequests  = "too_many_requests"
	codeSessionClosed    = "session_closed"
	codeUnavailable      = "unavailable"
	codeInternal         = "internal"
)

// apiError is an error as the API reports it, with its HTTP status.
type apiError struct {
	status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Rule    string `json:"rule,omitempty"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// badParam reports an invalid query parameter, naming it.
func badParam(name, rule string) *apiError {
	return &apiError{status: http.StatusBadRequest, Code: codeInvalidRequest,
		Message: fmt.Sprintf("query parameter %s: %s", name, rule), Field: name, Rule: rule}
}

// inputError turns err into a 400 if it is a *sandbox.InputError, else nil.
func inputError(err error) *apiError {
	var ie *sandbox.InputError
	if !errors.As(err, &ie) {
		return nil
	}
	return &apiError{status: http.StatusBadRequest, Code: codeInvalidRequest, Message: ie.Error(), Field: ie.Field, Rule: ie.Rule}
}

// internalError is what a client sees of a failure of the server itself;
// the details go to the log only.
var internalError = &apiError{status: http.StatusInternalServerError, Code: codeInternal, Message: "internal server error"}

// writeError answers e; a 429 or 503 tells the client to retry in a second.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.status, struct {
		Error *apiError `json:"error"`
	}{e})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// jsonFallback answers the requests the mux itself refuses (no route, or a
// route without this method) with a JSON error instead of plain text.
type jsonFallback struct {
	http.ResponseWriter
	written bool
}

func (w *jsonFallback) WriteHeader(status int) {
	w.written = true
	e := newError(status, codeNotFound, "no such endpoint")
	if status == http.StatusMethodNotAllowed {
		e = newError(status, codeMethodNotAllowed, "method not allowed; allowed: %s", w.Header().Get("Allow"))
	}
	writeError(w.ResponseWriter, e)
}

func (w *jsonFallback) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return len(b), nil // the mux's plain-text body is replaced
}
