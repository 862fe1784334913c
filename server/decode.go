package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/internal/jsonbody"
	"github.com/crucible-sandbox/crucible/service"
)

// Reading a body: it is the client's, so it is bounded in every way before
// a byte of it is read.
//
//   - Size: a Content-Length over the tenant's limit is refused at once
//     (413), unread; a body without one is cut at the limit.
//   - Memory: the body waits, unread, for its share of the payload budget
//     (service.ReservePayload), which it holds until its run ends, so a
//     burst of large bodies is served a few at a time.
//   - Time: the body must arrive within Config.BodyTimeout (408); a client
//     that sends a byte a second is cut off. The deadline is lifted once
//     the body is read, so that it never cuts a long run short.
//   - Type: a JSON body must come as Content-Type: application/json
//     (415 otherwise, before a byte is read). A web page can send a
//     text/plain, form or multipart body to any URL without a CORS
//     preflight; an application/json one it can send only to its own
//     origin. A body-less request may omit the type.
//   - Form: one JSON value and nothing after it, strictly decoded: unknown
//     fields, duplicate keys and invalid UTF-8 are refused (a lenient
//     decoder would run something other than what the client sent: the
//     last duplicate wins, invalid bytes silently become U+FFFD). Every
//     refusal names the field (a JSON path such as files[2].name, or
//     "body") and the rule.

// readBody reserves the payload of r's body, for tenant, and reads it
// through read, under the size and time bounds. The caller releases the
// payload (or hands it to the run the body becomes); on an error it is
// already released.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, tenant string, read func(io.Reader) *api.Error) (*service.Payload, *api.Error) {
	return s.readBodyWithin(w, r, tenant, tenantBodies, read)
}

// bodyLimit is the size limit of a route's bodies, and how such a body
// reserves its payload.
type bodyLimit struct {
	max     func(svc *service.Service, tenant string) int64
	reserve func(svc *service.Service, ctx context.Context, tenant string, n int64) (*service.Payload, error)
}

// tenantBodies are bounded by the tenant's limit: every route's but
// POST /v1/agent-runs's.
var tenantBodies = bodyLimit{max: (*service.Service).MaxBodyBytes, reserve: (*service.Service).ReservePayload}

// agentRunBodies are those of POST /v1/agent-runs, whose swe run carries
// a repository of up to swe.MaxRepoBytes in base64
// (service.MaxAgentRunBodyBytes).
var agentRunBodies = bodyLimit{max: (*service.Service).MaxAgentRunBodyBytes, reserve: (*service.Service).ReserveAgentRunPayload}

// readBodyWithin is readBody for bodies within bl.
func (s *Server) readBodyWithin(w http.ResponseWriter, r *http.Request, tenant string, bl bodyLimit, read func(io.Reader) *api.Error) (*service.Payload, *api.Error) {
	limit := bl.max(s.svc, tenant)
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	n := r.ContentLength
	if n < 0 { // unknown: count the most it may be
		n = limit
	}
	p, err := bl.reserve(s.svc, r.Context(), tenant, n)
	if err != nil {
		if e := answerOf(err); e != nil {
			return nil, e
		}
		return nil, newError(api.CodeUnavailable, "the request ended while waiting: %v", err)
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	apiErr := read(http.MaxBytesReader(w, r.Body, limit))
	_ = rc.SetReadDeadline(time.Time{})
	if apiErr != nil {
		p.Release()
		return nil, apiErr
	}
	return p, nil
}

// readJSON reads r's body as the JSON of v; see readBody. A body of known
// length is read into a buffer of exactly that size first and decoded
// from it: streaming it through the decoder instead grows the decoder's
// buffer by doubling, which costs up to twice the body again.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, tenant string, v any) (*service.Payload, *api.Error) {
	return s.readJSONBody(w, r, tenant, v, false, tenantBodies)
}

// readOptionalJSON is readJSON for a body whose every field is optional:
// an empty body (or none) decodes as {}, leaving v as it is.
func (s *Server) readOptionalJSON(w http.ResponseWriter, r *http.Request, tenant string, v any) (*service.Payload, *api.Error) {
	return s.readJSONBody(w, r, tenant, v, true, tenantBodies)
}

// readJSONBody is readJSON, and readOptionalJSON when optional is set,
// for bodies within bl.
func (s *Server) readJSONBody(w http.ResponseWriter, r *http.Request, tenant string, v any, optional bool, bl bodyLimit) (*service.Payload, *api.Error) {
	if apiErr := needContentType(r, jsonType); apiErr != nil {
		return nil, apiErr
	}
	return s.readBodyWithin(w, r, tenant, bl, func(body io.Reader) *api.Error {
		strict := json.RejectUnknownMembers(true)
		if r.ContentLength < 0 {
			br := bufio.NewReader(body)
			if _, err := br.Peek(1); optional && errors.Is(err, io.EOF) {
				return nil
			}
			return s.bodyError(json.UnmarshalRead(br, v, strict))
		}
		if optional && r.ContentLength == 0 {
			return nil
		}
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(body, buf); err != nil {
			return s.bodyError(err)
		}
		return s.bodyError(json.Unmarshal(buf, v, strict))
	})
}

// jsonType is the media type of a JSON body.
const jsonType = "application/json"

// needContentType answers 415 unless r's body comes as one of the media
// types (parameters such as charset aside) or r has neither a body nor a
// Content-Type.
func needContentType(r *http.Request, types ...string) *api.Error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && slices.Contains(types, mt) {
		return nil
	}
	e := newError(api.CodeUnsupportedMediaType, "unsupported Content-Type %q: send the body as %s", ct, strings.Join(types, " or "))
	e.Field, e.Rule = "Content-Type", "must be "+strings.Join(types, " or ")
	return e
}

// readRaw reads r's body as bytes; see readBody.
func (s *Server) readRaw(w http.ResponseWriter, r *http.Request, tenant string) ([]byte, *service.Payload, *api.Error) {
	var b []byte
	p, apiErr := s.readBody(w, r, tenant, func(body io.Reader) *api.Error {
		var err error
		b, err = io.ReadAll(body)
		return s.bodyError(err)
	})
	return b, p, apiErr
}

func tooLarge(limit int64) *api.Error {
	e := newError(api.CodePayloadTooLarge, "the body exceeds the limit of %d bytes", limit)
	e.Field, e.Rule = "body", fmt.Sprintf("must be at most %d bytes", limit)
	return e
}

// bodyError turns an error of reading or decoding a body into its answer.
func (s *Server) bodyError(err error) *api.Error {
	if err == nil {
		return nil
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return tooLarge(tooBig.Limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		e := newError(api.CodeRequestTimeout, "the body did not arrive within %s", s.cfg.BodyTimeout)
		e.Field, e.Rule = "body", "must arrive within "+s.cfg.BodyTimeout.String()
		return e
	}
	if field, rule, ok := jsonbody.Explain(err); ok {
		if strings.HasPrefix(rule, "is not a field here") {
			rule = "is not a field here (names are case-sensitive; see /openapi.json)"
		}
		return invalid(field, rule)
	}
	return invalid("body", "could not be read: "+err.Error())
}
