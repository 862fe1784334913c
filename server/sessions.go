package server

import (
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sync"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxClosedSessions bounds how many closed session IDs are remembered to
// answer 410 instead of 404.
const maxClosedSessions = 4096

// sessionTracker remembers the sessions this server opened, to count the
// open ones and to tell a closed session (410) from an unknown one (404).
type sessionTracker struct {
	rt Runtime

	mu          sync.Mutex
	open        map[string]bool
	closed      map[string]bool
	closedOrder []string // oldest first
}

func newSessionTracker(rt Runtime) *sessionTracker {
	return &sessionTracker{rt: rt, open: map[string]bool{}, closed: map[string]bool{}}
}

func (t *sessionTracker) add(id string) {
	t.mu.Lock()
	t.open[id] = true
	t.mu.Unlock()
}

// markClosed moves id from the open sessions to the closed ones.
func (t *sessionTracker) markClosed(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.markClosedLocked(id)
}

func (t *sessionTracker) markClosedLocked(id string) {
	delete(t.open, id)
	if t.closed[id] {
		return
	}
	t.closed[id] = true
	t.closedOrder = append(t.closedOrder, id)
	if len(t.closedOrder) > maxClosedSessions {
		delete(t.closed, t.closedOrder[0])
		t.closedOrder = t.closedOrder[1:]
	}
}

// gone reports whether id, which the runtime no longer holds, was a session
// of this server, and remembers it as closed.
func (t *sessionTracker) gone(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[id] { // closed by the runtime itself, such as when idle
		t.markClosedLocked(id)
		return true
	}
	return t.closed[id]
}

// active counts the open sessions, forgetting those the runtime closed on
// its own (idle timeout, Close).
func (t *sessionTracker) active() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.open {
		if _, ok := t.rt.Session(id); !ok {
			t.markClosedLocked(id)
		}
	}
	return float64(len(t.open))
}

// session returns the session the request's {id} names, or answers 404
// (never existed) or 410 (closed) and returns nil.
func (s *Server) session(w http.ResponseWriter, r *http.Request) sandbox.Session {
	id := r.PathValue("id")
	if sess, ok := s.cfg.Runtime.Session(id); ok {
		return sess
	}
	if s.sessions.gone(id) {
		writeError(w, errSessionClosed(id))
	} else {
		writeError(w, newError(http.StatusNotFound, codeNotFound, "no session %q", id))
	}
	return nil
}

func errSessionClosed(id string) *apiError {
	return newError(http.StatusGone, codeSessionClosed, "session %q is closed", id)
}

// sessionFailed answers err, returned by an operation on session id.
func (s *Server) sessionFailed(w http.ResponseWriter, id string, err error) {
	if e := inputError(err); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case errors.Is(err, sandbox.ErrSessionClosed):
		s.sessions.markClosed(id)
		writeError(w, errSessionClosed(id))
	case errors.Is(err, fs.ErrNotExist):
		writeError(w, newError(http.StatusNotFound, codeNotFound, "%v", err))
	default:
		s.fail(w, "session "+id, err)
	}
}

// createSession serves POST /v1/sessions.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req sandbox.SessionRequest
	if e := decodeJSON(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), &req); e != nil {
		writeError(w, e)
		return
	}
	if err := req.Validate(); err != nil {
		s.sessionFailed(w, "", err)
		return
	}
	sess, err := s.cfg.Runtime.NewSession(r.Context(), req)
	switch {
	case errors.Is(err, sandbox.ErrTooManySessions):
		writeError(w, newError(http.StatusTooManyRequests, codeTooManyRequests, "too many open sessions; close one or retry later"))
		return
	case err != nil:
		s.sessionFailed(w, "", err)
		return
	}
	s.sessions.add(sess.ID())
	writeJSON(w, http.StatusCreated, map[string]string{"id": sess.ID()})
}

// execCell serves POST /v1/sessions/{id}/exec.
func (s *Server) execCell(w http.ResponseWriter, r *http.Request) {
	var cell sandbox.Cell
	if e := decodeJSON(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), &cell); e != nil {
		writeError(w, e)
		return
	}
	if err := cell.Validate(); err != nil {
		s.sessionFailed(w, "", err)
		return
	}
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	res, err := sess.Exec(r.Context(), cell)
	if err != nil && res.Status == "" {
		s.sessionFailed(w, sess.ID(), err)
		return
	}
	if err != nil { // a platform failure that still has a Result
		s.log.Error("session cell failed", "session", sess.ID(), "err", err)
	}
	s.cfg.Redactor.RedactResult(&res)
	writeJSON(w, http.StatusOK, res)
}

// writeFile serves PUT /v1/sessions/{id}/files/{path...}.
func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	content, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeError(w, newError(http.StatusRequestEntityTooLarge, codePayloadTooLarge, "the body exceeds the limit of %d bytes", tooLarge.Limit))
		return
	}
	if err != nil {
		writeError(w, newError(http.StatusBadRequest, codeInvalidRequest, "reading the body: %v", err))
		return
	}
	if err := sess.WriteFile(r.Context(), r.PathValue("path"), content); err != nil {
		s.sessionFailed(w, sess.ID(), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// readFile serves GET /v1/sessions/{id}/files/{path...}.
func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	name := r.PathValue("path")
	content, err := sess.ReadFile(r.Context(), name)
	if err != nil {
		s.sessionFailed(w, sess.ID(), err)
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(content)
}

// listFiles serves GET /v1/sessions/{id}/files.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	files, err := sess.ListFiles(r.Context())
	if err != nil {
		s.sessionFailed(w, sess.ID(), err)
		return
	}
	if files == nil {
		files = []sandbox.FileInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"files": files})
}

// deleteSession serves DELETE /v1/sessions/{id}.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	err := sess.Close()
	s.sessions.markClosed(sess.ID())
	if err != nil {
		s.fail(w, "close session "+sess.ID(), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
