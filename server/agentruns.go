package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/service"
)

// serverOnlyFields are fields a request may never set: the model, its
// provider, endpoint and key are the server's configuration.
var serverOnlyFields = map[string]bool{"api_key": true, "key": true, "base_url": true, "model": true, "provider": true, "api_key_env": true}

// serverOnlyRule is the rule a request breaks by naming one of them.
const serverOnlyRule = `must not be sent: the model, its provider, endpoint and key are the server's configuration (crucible serve --config "model", or its environment), never a request's`

// agents answers 501 and returns false when the service runs no agents.
func (s *Server) agents(w http.ResponseWriter) bool {
	if err := s.svc.AgentsEnabled(); err != nil {
		s.fail(w, "agent runs", err)
		return false
	}
	return true
}

// createAgentRun serves POST /v1/agent-runs: 202 with the run at once,
// or with ?stream=1 its events as they come, the run bound to the
// stream's connection.
func (s *Server) createAgentRun(w http.ResponseWriter, r *http.Request) {
	stream, apiErr := boolParam(r.URL.Query().Get("stream"), "stream", false)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if !s.agents(w) {
		return
	}
	tenant := tenantOf(r)
	var req api.AgentRunRequest
	payload, apiErr := s.readJSONBody(w, r, tenant, &req, false, agentRunBodies)
	if apiErr != nil {
		if serverOnlyFields[apiErr.Field] {
			apiErr = invalid(apiErr.Field, serverOnlyRule)
		}
		writeError(w, apiErr)
		return
	}
	if !stream {
		// The run outlives this request; DELETE or Shutdown ends it.
		run, err := s.svc.StartAgentRun(context.WithoutCancel(r.Context()), tenant, req, payload)
		if err != nil {
			s.fail(w, "start agent run", err)
			return
		}
		w.Header().Set("Location", "/v1/agent-runs/"+run.ID)
		writeJSON(w, http.StatusAccepted, run)
		return
	}
	s.streamLazily(w, "start agent run", func(emit func(service.Event) bool) error {
		return s.svc.StreamAgentRun(r.Context(), tenant, req, payload, emit)
	})
}

// listAgentRuns serves GET /v1/agent-runs?limit=&cursor=.
func (s *Server) listAgentRuns(w http.ResponseWriter, r *http.Request) {
	if !s.agents(w) {
		return
	}
	q := r.URL.Query()
	page := service.AgentRunPage{Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, invalid("limit", "must be a positive integer, got "+strconv.Quote(v)))
			return
		}
		page.Limit = n
	}
	runs, next, err := s.svc.AgentRuns(r.Context(), tenantOf(r), page)
	if err != nil {
		s.fail(w, "list agent runs", err)
		return
	}
	if runs == nil {
		runs = []api.AgentRun{}
	}
	writeJSON(w, http.StatusOK, api.AgentRunList{AgentRuns: runs, Next: next})
}

// getAgentRun serves GET /v1/agent-runs/{id}: its status, its pending
// approval, and once it ended its trace.
func (s *Server) getAgentRun(w http.ResponseWriter, r *http.Request) {
	if !s.agents(w) {
		return
	}
	run, err := s.svc.AgentRun(tenantOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, "get agent run", err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

// agentRunEvents serves GET /v1/agent-runs/{id}/events: the run's events
// as a stream, after the one Last-Event-ID or ?after names.
func (s *Server) agentRunEvents(w http.ResponseWriter, r *http.Request) {
	if !s.agents(w) {
		return
	}
	after, field, apiErr := resumePoint(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	events, err := s.svc.AgentRunEvents(r.Context(), tenantOf(r), r.PathValue("id"), after)
	if err != nil {
		s.fail(w, "follow agent run", renameField(err, "after", field))
		return
	}
	s.serveEvents(w, events)
}

// decideApproval serves POST /v1/agent-runs/{id}/approvals/{approval_id}.
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request) {
	if !s.agents(w) {
		return
	}
	tenant := tenantOf(r)
	approve, reason, apiErr := s.readApproval(w, r, tenant)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	d, err := s.svc.DecideApproval(tenant, r.PathValue("id"), r.PathValue("approval_id"), approve, reason)
	if err != nil {
		s.fail(w, "decide approval", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// readApproval reads r's body, an api.ApprovalRequest.
func (s *Server) readApproval(w http.ResponseWriter, r *http.Request, tenant string) (approve bool, reason string, apiErr *api.Error) {
	var req api.ApprovalRequest
	payload, apiErr := s.readJSON(w, r, tenant, &req)
	if apiErr != nil {
		return false, "", apiErr
	}
	payload.Release()
	if req.Approve == nil {
		return false, "", invalid("approve", "is required: true runs the program, false refuses it")
	}
	return *req.Approve, req.Reason, nil
}

// cancelAgentRun serves DELETE /v1/agent-runs/{id}: the run is stopped,
// and answered once it has ended.
func (s *Server) cancelAgentRun(w http.ResponseWriter, r *http.Request) {
	if !s.agents(w) {
		return
	}
	run, err := s.svc.CancelAgentRun(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, "cancel agent run", err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}
