package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// decodeJSON decodes the single JSON value of body into v, refusing unknown
// fields and trailing data. A body past its http.MaxBytesReader limit is a
// 413; anything else wrong is a 400.
func decodeJSON(body io.Reader, v any) *apiError {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("the body must hold one JSON value and nothing after it")
		}
	}
	if err == nil {
		return nil
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return newError(http.StatusRequestEntityTooLarge, codePayloadTooLarge, "the body exceeds the limit of %d bytes", tooLarge.Limit)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		e := newError(http.StatusBadRequest, codeInvalidRequest, "invalid JSON body: %v", err)
		e.Field, e.Rule = typeErr.Field, fmt.Sprintf("must be a JSON %s", typeErr.Type)
		return e
	}
	if err == io.EOF {
		return newError(http.StatusBadRequest, codeInvalidRequest, "the body is empty; it must be a JSON object")
	}
	return newError(http.StatusBadRequest, codeInvalidRequest, "invalid JSON body: %v", err)
}

// decodeRunRequest reads a run request from body and validates it: a nil
// error means the request may be handed to the runtime.
func decodeRunRequest(body io.Reader) (sandbox.Request, *apiError) {
	var req sandbox.Request
	if e := decodeJSON(body, &req); e != nil {
		return sandbox.Request{}, e
	}
	if err := req.Validate(); err != nil {
		if e := inputError(err); e != nil {
			return sandbox.Request{}, e
		}
		return sandbox.Request{}, newError(http.StatusBadRequest, codeInvalidRequest, "%v", err)
	}
	return req, nil
}
