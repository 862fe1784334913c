package api

import "net/http"

// The stable error codes of the API, in Error.Code.
const (
	// CodeInvalidRequest: the request is wrong (400); Field and Rule say
	// where and why.
	CodeInvalidRequest = "invalid_request"
	// CodeUnauthorized: no valid API key (401).
	CodeUnauthorized = "unauthorized"
	// CodeNotFound: no such run, session, file or endpoint (404).
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: the endpoint exists, not with this method (405).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeRequestTimeout: the body did not arrive in time (408).
	CodeRequestTimeout = "request_timeout"
	// CodePayloadTooLarge: the body is over the limit (413).
	CodePayloadTooLarge = "payload_too_large"
	// CodeUnsupportedMediaType: a body was sent with a Content-Type the
	// endpoint does not read, such as a JSON body not sent as
	// application/json (415); Field is "Content-Type".
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeTooManyRequests: a queue, a slot table or a tenant's share is
	// full (429); retry after Retry-After.
	CodeTooManyRequests = "too_many_requests"
	// CodeSessionClosed: the session was closed or expired (410).
	CodeSessionClosed = "session_closed"
	// CodeUnavailable: the server is shutting down (503).
	CodeUnavailable = "unavailable"
	// CodeWithheld: the file holds a secret the server hides and is not
	// text, so it is not served at all rather than served corrupted (403).
	CodeWithheld = "withheld"
	// CodeConflict: the request contradicts the resource's state, such as
	// deciding an approval that was already decided (409).
	CodeConflict = "conflict"
	// CodeNotConfigured: the server is not set up for the endpoint, such
	// as agent runs without a model (501); Field names the setting.
	CodeNotConfigured = "not_configured"
	// CodeForbidden: the request is valid but the tenant may not make
	// it, such as asking for network without the server's leave (403);
	// Field and Rule say which part and why.
	CodeForbidden = "forbidden"
	// CodeUnsuitableImage: the image the request names, or its default,
	// lacks what the request needs, such as an analysis in an image
	// without pandas (422); Field is image, and the message names an
	// image that has it or how to build one.
	CodeUnsuitableImage = "unsuitable_image"
	// CodeInternal: the server failed, never the caller (500).
	CodeInternal = "internal"
)

// Error is an error as the API reports it: the body of every non-2xx
// answer is {"error": Error}.
type Error struct {
	// Code is one of the Code constants.
	Code string `json:"code"`
	// Message explains the error to a person.
	Message string `json:"message"`
	// Field names the offending part of the request: a JSON path such as
	// "limits.memory_bytes" or "files[2].name", a query parameter, a path
	// parameter, or "body" for the body as a whole.
	Field string `json:"field,omitempty"`
	// Rule is the rule Field breaks.
	Rule string `json:"rule,omitempty"`
}

// ErrorBody is the JSON body of a non-2xx answer.
type ErrorBody struct {
	// Error describes what went wrong.
	Error Error `json:"error"`
}

// HTTPStatus is the HTTP status the API answers an error of code with;
// an unknown code is a 500.
func HTTPStatus(code string) int {
	switch code {
	case CodeInvalidRequest:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeRequestTimeout:
		return http.StatusRequestTimeout
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case CodeSessionClosed:
		return http.StatusGone
	case CodeTooManyRequests:
		return http.StatusTooManyRequests
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeWithheld, CodeForbidden:
		return http.StatusForbidden
	case CodeConflict:
		return http.StatusConflict
	case CodeNotConfigured:
		return http.StatusNotImplemented
	case CodeUnsuitableImage:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}
