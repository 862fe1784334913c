package e2bapi

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/crucible-sandbox/crucible/internal/jsonbody"
	"github.com/crucible-sandbox/crucible/service"
)

// Reading a body: it is the client's, so it is bounded before a byte of
// it is read, as the HTTP API bounds its bodies (package server): its
// size by the tenant's limit (413), its memory by the service's payload
// budget (service.ReservePayload), its time by Config.BodyTimeout (408).
// A JSON body must come as application/json (415 otherwise): a web page
// can send other types to any URL without a CORS preflight. It is decoded
// as one JSON value, duplicate keys and invalid UTF-8 refused; unknown
// fields are ignored, as E2B's API ignores them, since each SDK release
// adds some.

// readBody reserves r's body in the payload budget for tenant and reads
// it through read. The caller releases the payload; on an error it is
// already released.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, tenant string, read func(io.Reader) error) (*service.Payload, error) {
	limit := h.svc.MaxBodyBytes(tenant)
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	n := r.ContentLength
	if n < 0 {
		n = limit
	}
	p, err := h.svc.ReservePayload(r.Context(), tenant, n)
	if err != nil {
		return nil, err
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.bodyTimeout))
	err = read(http.MaxBytesReader(w, r.Body, limit))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		p.Release()
		return nil, h.bodyError(err)
	}
	return p, nil
}

// readJSON reads r's JSON body into v; an empty body leaves v as it is
// (every body of this API has only optional fields or is checked after).
func (h *Handler) readJSON(w http.ResponseWriter, r *http.Request, tenant string, v any) (*service.Payload, error) {
	if e := needContentType(r, "application/json"); e != nil {
		return nil, e
	}
	return h.readBody(w, r, tenant, func(body io.Reader) error {
		b, err := io.ReadAll(body)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			return err
		}
		return json.Unmarshal(b, v)
	})
}

// needContentType answers 415 unless r's body comes as one of types, or
// r has neither a body nor a Content-Type.
func needContentType(r *http.Request, types ...string) *apiError {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength <= 0 {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	for _, t := range types {
		if err == nil && mt == t {
			return nil
		}
	}
	return unsupportedType(ct, types)
}

// unsupportedType is a 415 for a body of type ct, not one of types.
func unsupportedType(ct string, types []string) *apiError {
	return &apiError{Code: http.StatusUnsupportedMediaType, Field: "Content-Type", Rule: "must be " + strings.Join(types, " or "),
		Message: fmt.Sprintf("unsupported Content-Type %q: send the body as %s", cut(ct, 80), strings.Join(types, " or "))}
}

func tooLarge(limit int64) *apiError {
	return &apiError{Code: http.StatusRequestEntityTooLarge, Field: "body", Rule: fmt.Sprintf("must be at most %d bytes", limit),
		Message: fmt.Sprintf("the body exceeds the limit of %d bytes", limit)}
}

// bodyError turns an error of reading or decoding a body into its answer.
func (h *Handler) bodyError(err error) error {
	var tooBig *http.MaxBytesError
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &tooBig):
		return tooLarge(tooBig.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &apiError{Code: http.StatusRequestTimeout, Field: "body", Rule: "must arrive within " + h.bodyTimeout.String(),
			Message: "the body did not arrive within " + h.bodyTimeout.String()}
	}
	if field, rule, ok := jsonbody.Explain(err); ok {
		return invalid(field, "%s", rule)
	}
	return invalid("body", "could not be read: %v", err)
}
