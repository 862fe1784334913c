package e2bapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// ErrUnauthorized is what an error of Config.Authenticate is (errors.Is)
// when it refuses a key (make one with Unauthorized); the error's text is
// shown to the caller (401). Any other error of Authenticate is a failure
// of the platform (500, logged).
var ErrUnauthorized = errors.New("unauthorized")

// Unauthorized returns a refusal of a key, explained by message, for
// Config.Authenticate to return: it is ErrUnauthorized.
func Unauthorized(message string) error { return &unauthorizedError{message} }

type unauthorizedError struct{ msg string }

func (e *unauthorizedError) Error() string        { return e.msg }
func (e *unauthorizedError) Is(target error) bool { return target == ErrUnauthorized }

// apiError is an error as E2B's API answers it: Code is the HTTP status
// (E2B's SDKs test error.code == 404 to tell "not found" apart) and
// Message the explanation they raise. Field and Rule name the part of the
// request at fault and the rule it breaks, for bad input.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Rule    string `json:"rule,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// errorf is an error with status, explained by the formatted message.
func errorf(status int, format string, args ...any) *apiError {
	return &apiError{Code: status, Message: fmt.Sprintf(format, args...)}
}

// invalid is a 400 naming field and the rule it breaks.
func invalid(field, format string, args ...any) *apiError {
	rule := fmt.Sprintf(format, args...)
	return &apiError{Code: http.StatusBadRequest, Message: "invalid request: " + field + ": " + rule, Field: field, Rule: rule}
}

// notImplemented is a 501 for what E2B offers and Crucible does not.
func notImplemented(format string, args ...any) *apiError {
	return errorf(http.StatusNotImplemented, format, args...)
}

// statusOfKind maps the service's refusals to HTTP statuses.
var statusOfKind = map[service.Kind]int{
	service.KindNotFound:        http.StatusNotFound,
	service.KindSessionClosed:   http.StatusNotFound, // E2B: a killed sandbox is not found
	service.KindTooLarge:        http.StatusRequestEntityTooLarge,
	service.KindBusy:            http.StatusTooManyRequests,
	service.KindUnavailable:     http.StatusServiceUnavailable,
	service.KindWithheld:        http.StatusForbidden,
	service.KindConflict:        http.StatusConflict,
	service.KindNotConfigured:   http.StatusNotImplemented,
	service.KindForbidden:       http.StatusForbidden,
	service.KindUnsuitableImage: http.StatusUnprocessableEntity,
}

// answerOf returns the answer to err: itself if it is an *apiError, a 400
// for bad input, the status of a refusal of the service, or nil for a
// failure of the platform, which the caller logs and answers as internal.
// rename, if set, renames the service's field names into this API's
// (env → envVars).
func answerOf(err error, rename map[string]string) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var ie *sandbox.InputError
	if errors.As(err, &ie) {
		field := ie.Field
		if f, ok := rename[field]; ok {
			field = f
		}
		return invalid(field, "%s", ie.Rule)
	}
	var se *service.Error
	if errors.As(err, &se) {
		status, ok := statusOfKind[se.Kind]
		if !ok {
			status = http.StatusInternalServerError
		}
		return &apiError{Code: status, Message: se.Message, Field: se.Field, Rule: se.Rule}
	}
	return nil
}

// fail answers err, met while doing what: a refusal as such, anything
// else logged and answered as an internal error that reveals nothing.
func (h *Handler) fail(w http.ResponseWriter, what string, err error, rename map[string]string) {
	if e := answerOf(err, rename); e != nil {
		writeError(w, e)
		return
	}
	h.log.Error("e2b: "+what, "err", err)
	writeError(w, errorf(http.StatusInternalServerError, "internal server error"))
}

// writeError answers e; a 429 or 503 tells the client to retry in a second.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.Code == http.StatusTooManyRequests || e.Code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Code, e)
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
