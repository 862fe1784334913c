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

// newError is an error of code, explained by the formatted message; its
// HTTP status follows from the code (api.HTTPStatus).
func newError(code, format string, args ...any) *api.Error {
	return &api.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// invalid reports a 400 naming the field at fault and the rule it breaks.
func invalid(field, rule string) *api.Error {
	return &api.Error{Code: api.CodeInvalidRequest, Message: fmt.Sprintf("invalid request: %s: %s", field, rule), Field: field, Rule: rule}
}

// internalError is what a client sees of a failure of the server itself;
// the details go to the log only.
var internalError = &api.Error{Code: api.CodeInternal, Message: "internal server error"}

// codeOfKind maps the service's refusals to the API's error codes.
var codeOfKind = map[service.Kind]string{
	service.KindNotFound:        api.CodeNotFound,
	service.KindSessionClosed:   api.CodeSessionClosed,
	service.KindTooLarge:        api.CodePayloadTooLarge,
	service.KindBusy:            api.CodeTooManyRequests,
	service.KindUnavailable:     api.CodeUnavailable,
	service.KindWithheld:        api.CodeWithheld,
	service.KindConflict:        api.CodeConflict,
	service.KindNotConfigured:   api.CodeNotConfigured,
	service.KindForbidden:       api.CodeForbidden,
	service.KindUnsuitableImage: api.CodeUnsuitableImage,
}

// answerOf returns the answer to err, an error of the service: a 400 for
// bad input, the status of the service's refusal, or nil for a failure of
// the platform, which the caller logs and answers as internal.
func answerOf(err error) *api.Error {
	var ie *sandbox.InputError
	if errors.As(err, &ie) {
		return invalid(ie.Field, ie.Rule)
	}
	var se *service.Error
	if errors.As(err, &se) {
		return &api.Error{Code: codeOfKind[se.Kind], Message: se.Message, Field: se.Field, Rule: se.Rule}
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
func writeError(w http.ResponseWriter, e *api.Error) {
	status := api.HTTPStatus(e.Code)
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, api.ErrorBody{Error: *e})
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
	e := newError(api.CodeNotFound, "no such endpoint")
	e.Field, e.Rule = "path", "must name an endpoint of the API (see /openapi.json)"
	if status == http.StatusMethodNotAllowed {
		e = newError(api.CodeMethodNotAllowed, "method not allowed; allowed: %s", w.Header().Get("Allow"))
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
