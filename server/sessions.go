package server

import (
	"context"
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

// sessionTracker remembers the sessions this server opened and their
// tenants: to count the open ones, to refuse a tenant more than its limit,
// to hide a session from every other tenant, and to tell a closed session
// (410) from an unknown one (404).
type sessionTracker struct {
	rt Runtime

	mu          sync.Mutex
	open        map[string]string // session ID → tenant
	opening     map[string]int    // tenant → sessions being created
	closed      map[string]string // session ID → tenant
	closedOrder []string          // oldest first
}

func newSessionTracker(rt Runtime) *sessionTracker {
	return &sessionTracker{rt: rt, open: map[string]string{}, opening: map[string]int{}, closed: map[string]string{}}
}

// reserve counts a session tenant is about to open, unless it already has
// max (0: no bound). The caller then calls opened or cancel.
func (t *sessionTracker) reserve(tenant string, max int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if max > 0 {
		n := t.opening[tenant]
		for id, owner := range t.open {
			if owner != tenant {
				continue
			}
			if _, ok := t.rt.Session(id); !ok { // closed by the runtime (idle)
				t.markClosedLocked(id)
				continue
			}
			n++
		}
		if n >= max {
			return false
		}
	}
	t.opening[tenant]++
	return true
}

// cancel gives back a reservation that did not open a session.
func (t *sessionTracker) cancel(tenant string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unreserveLocked(tenant)
}

func (t *sessionTracker) unreserveLocked(tenant string) {
	if t.opening[tenant]--; t.opening[tenant] <= 0 {
		delete(t.opening, tenant)
	}
}

// opened turns tenant's reservation into the open session id.
func (t *sessionTracker) opened(tenant, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unreserveLocked(tenant)
	t.open[id] = tenant
}

// markClosed moves id from the open sessions to the closed ones.
func (t *sessionTracker) markClosed(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.markClosedLocked(id)
}

func (t *sessionTracker) markClosedLocked(id string) {
	tenant, ok := t.open[id]
	if !ok {
		return
	}
	delete(t.open, id)
	t.closed[id] = tenant
	t.closedOrder = append(t.closedOrder, id)
	if len(t.closedOrder) > maxClosedSessions {
		delete(t.closed, t.closedOrder[0])
		t.closedOrder = t.closedOrder[1:]
	}
}

// owner returns the tenant of the open session id, if this server opened
// it.
func (t *sessionTracker) owner(id string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tenant, ok := t.open[id]
	return tenant, ok
}

// gone reports whether id, which the runtime no longer holds, was a session
// of tenant, and remembers it as closed.
func (t *sessionTracker) gone(tenant, id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.rt.Session(id); !ok {
		t.markClosedLocked(id) // the runtime closed it itself, such as when idle
	}
	owner, ok := t.closed[id]
	return ok && owner == tenant
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
// (never existed, or another tenant's) or 410 (closed) and returns nil.
// Another tenant's session is a 404 like a missing one, so that IDs
// reveal nothing across tenants.
func (s *Server) session(w http.ResponseWriter, r *http.Request) sandbox.Session {
	id, tenant := r.PathValue("id"), tenantOf(r)
	if owner, ok := s.sessions.owner(id); ok && owner == tenant {
		if sess, ok := s.cfg.Runtime.Session(id); ok {
			return sess
		}
	}
	if s.sessions.gone(tenant, id) {
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
	writeError(w, s.sessionError(id, err))
}

// sessionError is the answer to err, returned by an operation on session
// id; a failure of the server itself is logged and answered as internal.
func (s *Server) sessionError(id string, err error) *apiError {
	if e := inputError(err); e != nil {
		return e
	}
	switch {
	case errors.Is(err, sandbox.ErrSessionClosed):
		s.sessions.markClosed(id)
		return errSessionClosed(id)
	case errors.Is(err, fs.ErrNotExist):
		return newError(http.StatusNotFound, codeNotFound, "%v", err)
	}
	s.log.Error("session "+id, "err", err)
	return internalError
}

// exec runs cell in sess and returns its redacted Result, or the error to
// answer when there is no Result.
func (s *Server) exec(ctx context.Context, sess sandbox.Session, cell sandbox.Cell) (sandbox.Result, *apiError) {
	res, err := sess.Exec(ctx, cell)
	if err != nil && res.Status == "" {
		return res, s.sessionError(sess.ID(), err)
	}
	if err != nil { // a platform failure that still has a Result
		s.log.Error("session cell failed", "session", sess.ID(), "err", err)
	}
	s.cfg.Redactor.RedactResult(&res)
	return res, nil
}

// createSession serves POST /v1/sessions.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r)
	var req sandbox.SessionRequest
	if e := decodeJSON(http.MaxBytesReader(w, r.Body, s.bodyLimit(tenant)), &req); e != nil {
		writeError(w, e)
		return
	}
	if err := req.Validate(); err != nil {
		s.sessionFailed(w, "", err)
		return
	}
	if max := s.limitsFor(tenant).MaxSessions; !s.sessions.reserve(tenant, max) {
		writeError(w, newError(http.StatusTooManyRequests, codeTooManyRequests,
			"tenant %q already has %d open sessions, its limit; close one or retry later", tenant, max))
		return
	}
	sess, err := s.cfg.Runtime.NewSession(r.Context(), req)
	switch {
	case errors.Is(err, sandbox.ErrTooManySessions):
		s.sessions.cancel(tenant)
		writeError(w, newError(http.StatusTooManyRequests, codeTooManyRequests, "too many open sessions; close one or retry later"))
		return
	case err != nil:
		s.sessions.cancel(tenant)
		s.sessionFailed(w, "", err)
		return
	}
	s.sessions.opened(tenant, sess.ID())
	writeJSON(w, http.StatusCreated, map[string]string{"id": sess.ID()})
}

// execCell serves POST /v1/sessions/{id}/exec.
func (s *Server) execCell(w http.ResponseWriter, r *http.Request) {
	var cell sandbox.Cell
	if e := decodeJSON(http.MaxBytesReader(w, r.Body, s.bodyLimit(tenantOf(r))), &cell); e != nil {
		writeError(w, e)
		return
	}
	if err := cell.Validate(); err != nil {
		s.sessionFailed(w, "", err)
		return
	}
	stream, apiErr := boolParam(r.URL.Query().Get("stream"), "stream", false)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	if stream {
		s.streamCell(w, r, sess, cell)
		return
	}
	res, apiErr := s.exec(r.Context(), sess, cell)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// writeFile serves PUT /v1/sessions/{id}/files/{path...}.
func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) {
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	content, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.bodyLimit(tenantOf(r))))
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

// streamCell runs cell in sess, answering with an event stream. Failures
// found once the stream started are sent as an error event.
func (s *Server) streamCell(w http.ResponseWriter, r *http.Request, sess sandbox.Session, cell sandbox.Cell) {
	es := startEventStream(w)
	defer es.close()
	out := newOutputRedactor(s.cfg.Redactor, es.send)
	cell.OnOutput = out.output
	res, apiErr := s.exec(r.Context(), sess, cell)
	out.flush() // the runtime delivers no output after Exec returns
	if apiErr != nil {
		es.send("error", apiErr)
		return
	}
	es.send("result", res)
}
