package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// apiError is an error as the API reports it, with its HTTP status.
type apiError struct {
	status int
	api.Error
}

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, Error: api.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// invalid reports a 400 naming the field at fault and the rule it breaks.
func invalid(field, rule string) *apiError {
	return &apiError{status: http.StatusBadRequest, Error: api.Error{Code: api.CodeInvalidRequest,
		Message: fmt.Sprintf("invalid request: %s: %s", field, rule), Field: field, Rule: rule}}
}

// badParam reports an invalid query parameter, naming it.
func badParam(name, rule string) *apiError { return invalid(name, rule) }

// internalError is what a client sees of a failure of the server itself;
// the details go to the log only.
var internalError = &apiError{status: http.StatusInternalServerError,
	Error: api.Error{Code: api.CodeInternal, Message: "internal server error"}}

// statusOfKind maps the service's refusals to HTTP.
var statusOfKind = map[service.Kind]struct {
	status int
	code   string
}{
	service.KindNotFound:      {http.StatusNotFound, api.CodeNotFound},
	service.KindSessionClosed: {http.StatusGone, api.CodeSessionClosed},
	service.KindTooLarge:      {http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge},
	service.KindBusy:          {http.StatusTooManyRequests, api.CodeTooManyRequests},
	service.KindUnavailable:   {http.StatusServiceUnavailable, api.CodeUnavailable},
}

// answerOf returns the answer to err, an error of the service: a 400 for
// bad input, the status of the service's refusal, or nil for a failure of
// the platform, which the caller logs and answers as internal.
func answerOf(err error) *apiError {
	var ie *sandbox.InputError
	if errors.As(err, &ie) {
		return invalid(ie.Field, ie.Rule)
	}
	var se *service.Error
	if errors.As(err, &se) {
		m := statusOfKind[se.Kind]
		return &apiError{status: m.status, Error: api.Error{Code: m.code, Message: se.Message, Field: se.Field, Rule: se.Rule}}
	}
	return nil
}

// fail answers err, returned by the service while doing what: a refusal
// as such, anything else logged and answered as an internal error that
// reveals nothing.
func (s *Server) fail(w http.ResponseWriter, what string, err error) {
	if e := answerOf(err); e != nil {
		writeError(w, e)
		return
	}
	s.log.Error(what, "err", err)
	writeError(w, internalError)
}

// writeError answers e; a 429 or 503 tells the client to retry in a second.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.status, api.ErrorBody{Error: e.Error})
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
	e := newError(status, api.CodeNotFound, "no such endpoint")
	e.Field, e.Rule = "path", "must name an endpoint of the API (see /openapi.json)"
	if status == http.StatusMethodNotAllowed {
		e = newError(status, api.CodeMethodNotAllowed, "method not allowed; allowed: %s", w.Header().Get("Allow"))
		e.Field, e.Rule = "method", "must be one of "+w.Header().Get("Allow")
	}
	writeError(w.ResponseWriter, e)
}

func (w *jsonFallback) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return len(b), nil // the mux's plain-text body is replaced
}
