package server

import (
	"mime"
	"net/http"
	"path"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// session returns the session the request's {id} names, or answers 404
// (never existed, or another tenant's) or 410 (closed) and returns nil.
func (s *Server) session(w http.ResponseWriter, r *http.Request) *service.Session {
	sess, err := s.svc.Session(tenantOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, "find session", err)
		return nil
	}
	return sess
}

// createSession serves POST /v1/sessions: every field of the body is
// optional, and so is the body itself (a Python session in the default
// image with the default limits); the answer describes the new session.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r)
	var req sandbox.SessionRequest
	payload, apiErr := s.readOptionalJSON(w, r, tenant, &req)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	defer payload.Release()
	sess, err := s.svc.OpenSession(r.Context(), tenant, req, service.SessionOptions{})
	if err != nil {
		s.fail(w, "open session", err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+sess.ID())
	writeJSON(w, http.StatusCreated, sess.Info())
}

// listSessions serves GET /v1/sessions: the tenant's open sessions, and
// the limits a new one gets by default.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.SessionList{Sessions: s.svc.Sessions(tenantOf(r)), Defaults: s.svc.SessionDefaults()})
}

// getSession serves GET /v1/sessions/{id}.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	writeJSON(w, http.StatusOK, sess.Info())
}

// execCell serves POST /v1/sessions/{id}/exec, ?stream=1 as events.
func (s *Server) execCell(w http.ResponseWriter, r *http.Request) {
	stream, apiErr := boolParam(r.URL.Query().Get("stream"), "stream", false)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	var cell sandbox.Cell
	payload, apiErr := s.readJSON(w, r, tenantOf(r), &cell)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	defer payload.Release()
	if !stream {
		res, err := sess.ExecRecorded(r.Context(), cell)
		if err != nil {
			s.fail(w, "session cell", err)
			return
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	es := startEventStream(w)
	defer es.close()
	cell.OnOutput = func(stream sandbox.Stream, chunk []byte) { es.send(string(stream), sandbox.Data(chunk)) }
	res, err := sess.ExecRecorded(r.Context(), cell)
	if err != nil { // found once the stream started: an error event
		e := answerOf(err)
		if e == nil {
			s.log.Error("session cell", "session", sess.ID(), "err", err)
			e = internalError
		}
		es.send("error", e)
		return
	}
	es.send("result", res)
}

// writeFile serves PUT /v1/sessions/{id}/files/{path...}.
func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	content, payload, apiErr := s.readRaw(w, r, tenantOf(r))
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	defer payload.Release()
	if err := sess.WriteFile(r.Context(), r.PathValue("path"), content); err != nil {
		s.fail(w, "write session file", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// readFile serves GET /v1/sessions/{id}/files/{path...}: the file,
// redacted by the service, as untrusted content.
func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	name := r.PathValue("path")
	content, err := sess.ReadFile(r.Context(), name)
	if err != nil {
		s.fail(w, "read session file", err)
		return
	}
	serveUntrusted(w, name, mime.TypeByExtension(path.Ext(name)), content)
}

// listFiles serves GET /v1/sessions/{id}/files; the service redacts the
// names.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	files, err := sess.ListFiles(r.Context())
	if err != nil {
		s.fail(w, "list session files", err)
		return
	}
	if files == nil {
		files = []sandbox.FileInfo{}
	}
	writeJSON(w, http.StatusOK, api.FileList{Files: files})
}

// deleteSession serves DELETE /v1/sessions/{id}.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	if err := sess.Close(); err != nil {
		s.fail(w, "close session "+sess.ID(), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
