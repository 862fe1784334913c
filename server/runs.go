package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// createRun serves POST /v1/runs: ?cache=1 answers from the cache when it
// can; ?async=1 answers 202 with the run's id at once; ?stream=1 answers
// its events as they come (events.go); otherwise the result.
func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	tenant, q := tenantOf(r), r.URL.Query()
	useCache, apiErr := boolParam(q.Get("cache"), "cache", false)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	async, apiErr := boolParam(q.Get("async"), "async", false)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	stream, apiErr := boolParam(q.Get("stream"), "stream", false)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if stream && async {
		writeError(w, invalid("stream", `cannot be combined with async=1: stream the run, or poll it`))
		return
	}
	var req sandbox.Request
	payload, apiErr := s.readJSON(w, r, tenant, &req)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	opts := service.RunOptions{Cache: useCache, Payload: payload}
	switch {
	case async:
		// The run outlives this request; Shutdown ends it if need be.
		acc, err := s.svc.Start(context.WithoutCancel(r.Context()), tenant, req, opts)
		if err != nil {
			s.fail(w, "start run", err)
			return
		}
		w.Header().Set("Location", "/v1/runs/"+acc.ID)
		writeJSON(w, http.StatusAccepted, acc)
	case stream:
		// The run ends when this client goes away.
		s.streamLazily(w, "start run", func(emit func(service.Event) bool) error {
			return s.svc.Stream(r.Context(), tenant, req, opts, emit)
		})
	default:
		res, err := s.svc.Run(r.Context(), tenant, req, opts)
		if err != nil {
			s.fail(w, "run", err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

// runEvents serves GET /v1/runs/{id}/events: the run's events as a
// stream, after the one Last-Event-ID or ?after names (events.go).
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	after, field, apiErr := resumePoint(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	// The run must exist before the stream starts, to answer 404 otherwise.
	events, err := s.svc.Events(r.Context(), tenantOf(r), r.PathValue("id"), after)
	if err != nil {
		s.fail(w, "follow run", renameField(err, "after", field))
		return
	}
	s.serveEvents(w, events)
}

// boolParam reads an optional "0"/"1" query parameter.
func boolParam(v, name string, def bool) (bool, *api.Error) {
	switch v {
	case "":
		return def, nil
	case "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, invalid(name, `must be "0" or "1", got "`+v+`"`)
}

// getRun serves GET /v1/runs/{id}.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	rec, err := s.svc.Get(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, "get run", err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// listRuns serves GET /v1/runs?status=&language=&session=&agent_run=&since=&limit=&cursor=.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := service.RunFilter{Status: sandbox.Status(q.Get("status")), SessionID: q.Get("session"), AgentRun: q.Get("agent_run"), Cursor: q.Get("cursor")}
	if f.Status != "" && !api.ValidStatus(f.Status) {
		writeError(w, invalid("status", "is not a run status, got "+strconv.Quote(q.Get("status"))))
		return
	}
	if v := q.Get("language"); v != "" {
		l, ok := sandbox.ParseLanguage(v)
		if !ok {
			writeError(w, invalid("language", "must be one of "+sandbox.LanguageNames()+", got "+strconv.Quote(v)))
			return
		}
		f.Language = l
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeError(w, invalid("since", "must be an RFC 3339 time such as 2025-01-02T15:04:05Z, got "+strconv.Quote(v)))
			return
		}
		f.Since = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, invalid("limit", "must be a positive integer, got "+strconv.Quote(v)))
			return
		}
		f.Limit = n
	}
	runs, next, err := s.svc.List(r.Context(), tenantOf(r), f)
	if err != nil {
		s.fail(w, "list runs", err)
		return
	}
	if runs == nil {
		runs = []api.Run{}
	}
	writeJSON(w, http.StatusOK, api.RunList{Runs: runs, Next: next})
}

// getArtifact serves GET /v1/runs/{id}/artifacts/{name...}: the artifact's
// bytes (redacted before they were stored), as untrusted content, with its
// SHA-256 as the ETag.
func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) {
	meta, content, err := s.svc.Artifact(r.Context(), tenantOf(r), r.PathValue("id"), r.PathValue("name"))
	if err != nil {
		s.fail(w, "get artifact", err)
		return
	}
	w.Header().Set("ETag", `"`+meta.SHA256+`"`)
	serveUntrusted(w, meta.Name, meta.MIME, content)
}
