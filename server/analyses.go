package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/service"
)

// createAnalysis serves POST /v1/analyses: from a multipart/form-data
// upload, or from a JSON body (the datasets whole, or files of a
// session); 201 with the analysis and its profile.
func (s *Server) createAnalysis(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r)
	var spec service.AnalysisSpec
	var payload *service.Payload
	var apiErr *api.Error
	if apiErr = needContentType(r, jsonType, formType); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if isMultipart(r) {
		spec, payload, apiErr = s.readAnalysisForm(w, r, tenant)
	} else {
		var req api.AnalysisRequest
		payload, apiErr = s.readJSON(w, r, tenant, &req)
		spec = service.AnalysisSpec{SessionID: req.SessionID, Files: req.Files, Image: req.Image, Limits: req.Limits}
		for _, d := range req.Datasets {
			spec.Datasets = append(spec.Datasets, service.Dataset{Name: d.Name, Content: d.Content})
		}
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	a, err := s.svc.CreateAnalysis(r.Context(), tenant, spec, payload)
	if err != nil {
		s.fail(w, "create analysis", err)
		return
	}
	w.Header().Set("Location", "/v1/analyses/"+a.ID)
	writeJSON(w, http.StatusCreated, a)
}

// listAnalyses serves GET /v1/analyses?limit=&cursor=.
func (s *Server) listAnalyses(w http.ResponseWriter, r *http.Request) {
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, invalid("limit", "must be a positive integer, got "+strconv.Quote(clip(v, 40))))
			return
		}
		limit = n
	}
	list, next, err := s.svc.Analyses(r.Context(), tenantOf(r), limit, r.URL.Query().Get("cursor"))
	if err != nil {
		s.fail(w, "list analyses", err)
		return
	}
	if list == nil {
		list = []api.Analysis{}
	}
	writeJSON(w, http.StatusOK, api.AnalysisList{Analyses: list, Next: next})
}

// getAnalysis serves GET /v1/analyses/{id}: the profile and the
// conversation.
func (s *Server) getAnalysis(w http.ResponseWriter, r *http.Request) {
	a, err := s.svc.Analysis(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, "get analysis", err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// deleteAnalysis serves DELETE /v1/analyses/{id}.
func (s *Server) deleteAnalysis(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.DeleteAnalysis(r.Context(), tenantOf(r), r.PathValue("id")); err != nil {
		s.fail(w, "delete analysis", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// askQuestion serves POST /v1/analyses/{id}/questions: 202 with the
// question at once, or with ?stream=1 its events as they come, the
// question bound to the stream's connection, as for an agent run.
func (s *Server) askQuestion(w http.ResponseWriter, r *http.Request) {
	stream, apiErr := boolParam(r.URL.Query().Get("stream"), "stream", false)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if !s.agents(w) {
		return
	}
	tenant, id := tenantOf(r), r.PathValue("id")
	var req api.QuestionRequest
	payload, apiErr := s.readJSON(w, r, tenant, &req)
	if apiErr != nil {
		if serverOnlyFields[apiErr.Field] {
			apiErr = invalid(apiErr.Field, serverOnlyRule)
		}
		writeError(w, apiErr)
		return
	}
	payload.Release() // the question is copied into the run
	if !stream {
		q, err := s.svc.AskAnalysis(context.WithoutCancel(r.Context()), tenant, id, req)
		if err != nil {
			s.fail(w, "ask analysis", err)
			return
		}
		w.Header().Set("Location", questionPath(id, q.N))
		writeJSON(w, http.StatusAccepted, q)
		return
	}
	s.streamLazily(w, "ask analysis", func(emit func(service.Event) bool) error {
		return s.svc.StreamAnalysisQuestion(r.Context(), tenant, id, req, emit)
	})
}

// questionPath is the URL path of question n of analysis id.
func questionPath(id string, n int) string {
	return "/v1/analyses/" + id + "/questions/" + strconv.Itoa(n)
}

// questionNumber returns the request's {n}, or answers 400 and returns 0.
func questionNumber(w http.ResponseWriter, r *http.Request) int {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		writeError(w, invalid("n", "must be a question's number, an integer from 1, got "+strconv.Quote(clip(r.PathValue("n"), 40))))
		return 0
	}
	return n
}

// clip cuts s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// listQuestions serves GET /v1/analyses/{id}/questions: the
// conversation, with the answers as data.
func (s *Server) listQuestions(w http.ResponseWriter, r *http.Request) {
	qs, err := s.svc.AnalysisQuestions(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, "list questions", err)
		return
	}
	if qs == nil {
		qs = []api.AnalysisQuestion{}
	}
	writeJSON(w, http.StatusOK, api.AnalysisQuestionList{Questions: qs})
}

// getQuestion serves GET /v1/analyses/{id}/questions/{n}: with its
// answer and, once it ended, its run's trace.
func (s *Server) getQuestion(w http.ResponseWriter, r *http.Request) {
	n := questionNumber(w, r)
	if n == 0 {
		return
	}
	q, err := s.svc.AnalysisQuestion(r.Context(), tenantOf(r), r.PathValue("id"), n)
	if err != nil {
		s.fail(w, "get question", err)
		return
	}
	writeJSON(w, http.StatusOK, q)
}

// questionEvents serves GET /v1/analyses/{id}/questions/{n}/events: the
// question's events as a stream, resumable as an agent run's.
func (s *Server) questionEvents(w http.ResponseWriter, r *http.Request) {
	n := questionNumber(w, r)
	if n == 0 {
		return
	}
	after, field, apiErr := resumePoint(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	events, err := s.svc.AnalysisQuestionEvents(r.Context(), tenantOf(r), r.PathValue("id"), n, after)
	if err != nil {
		s.fail(w, "follow question", renameField(err, "after", field))
		return
	}
	s.serveEvents(w, events)
}

// decideQuestionApproval serves POST
// /v1/analyses/{id}/questions/{n}/approvals/{approval_id}.
func (s *Server) decideQuestionApproval(w http.ResponseWriter, r *http.Request) {
	n := questionNumber(w, r)
	if n == 0 {
		return
	}
	tenant := tenantOf(r)
	approve, reason, apiErr := s.readApproval(w, r, tenant)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	d, err := s.svc.DecideQuestionApproval(r.Context(), tenant, r.PathValue("id"), n, r.PathValue("approval_id"), approve, reason)
	if err != nil {
		s.fail(w, "decide approval", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// analysisFile serves GET /v1/analyses/{id}/files/{name...}: a chart or
// a file of an answer (?question=N picks the question; the latest that
// has it otherwise), as untrusted content.
func (s *Server) analysisFile(w http.ResponseWriter, r *http.Request) {
	n := 0
	if v := r.URL.Query().Get("question"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			writeError(w, invalid("question", "must be a question's number, an integer from 1, got "+strconv.Quote(clip(v, 40))))
			return
		}
	}
	art, err := s.svc.AnalysisFile(r.Context(), tenantOf(r), r.PathValue("id"), r.PathValue("name"), n)
	if err != nil {
		s.fail(w, "get analysis file", err)
		return
	}
	if art.SHA256 != "" {
		w.Header().Set("ETag", `"`+art.SHA256+`"`)
	}
	serveUntrusted(w, art.Name, art.MIME, art.Content)
}
