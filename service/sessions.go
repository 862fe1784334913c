package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// newSessionRegistry returns the table of the sessions the service
// opened: at most max open at once. A session that ends on its own (idle
// expiry, its interpreter died) is noticed when it says so (its Done
// channel) or when an operation on it reports it closed; nothing polls.
func newSessionRegistry(max int) *registry[*Session] {
	return newRegistry[*Session](registryConfig{max: max, remember: maxClosedIDs,
		notFound:  func(id string) error { return errorf(KindNotFound, "no session %q", id) },
		closedErr: func(id string) error { return errSessionClosed(id) },
		tenantFull: func(tenant string, n, _ int) error {
			return errorf(KindBusy, "tenant %q already has %d open sessions, its share; close one or retry later", tenant, n)
		},
		full: func() error { return errorf(KindBusy, "too many open sessions; close one or retry later") }})
}

func errSessionClosed(id string) *Error {
	return errorf(KindSessionClosed, "session %q is closed", id)
}

// SessionOptions adjust a session.
type SessionOptions struct {
	// AgentRun links the records of the session's cells to the agent run
	// that opened it.
	AgentRun string
	// Agent says the session runs a model's code, as one with an
	// AgentRun does, before any agent run is linked (an analysis's): its
	// code policy is at least AgentMode.
	Agent bool
}

// Session is a session the service opened for a tenant: a live
// interpreter whose cells go through the pipeline (recorded as runs with
// the session's ID, redacted, counted). It implements sandbox.Session.
type Session struct {
	s       *Service
	id      string
	tenant  string
	sess    sandbox.Session
	img     *Image
	limits  sandbox.Limits
	created time.Time
	policy  codePolicy

	mu       sync.Mutex
	lastUsed time.Time
	cells    int
	restarts int
	agentRun string
	// observer, if set, is told of each cell that is not Unchecked once
	// it ran (an analysis keeps those that built its state).
	observer func(code string, res sandbox.Result)

	endOnce sync.Once // the Placement told of its end
}

var _ sandbox.Session = (*Session)(nil)

// ender is a session that says when it has ended on its own.
type ender interface{ Done() <-chan struct{} }

// OpenSession starts a session for tenant in the image req names (the
// session default for none, defaultSessionImage), within the tenant's share and the service's maximum
// of open sessions. An empty language is Python, and an alias of it
// ("py") is resolved, as for a run.
func (s *Service) OpenSession(ctx context.Context, tenant string, req sandbox.SessionRequest, opts SessionOptions) (*Session, error) {
	req.Language = req.Language.Canonical()
	if err := req.Validate(); err != nil {
		return nil, err
	}
	img, err := s.sessionImageNamed(req.Image)
	if err != nil {
		return nil, err
	}
	req.Image = "" // the runtime is the image's: it runs in no other
	if err := s.validSessionLimits(&req.Limits); err != nil {
		return nil, err
	}
	pol, err := s.policyFor(tenant, req.Policy, opts.AgentRun != "" || opts.Agent)
	if err != nil {
		return nil, err
	}
	if p := s.cfg.Placement; p != nil {
		if err := p.Admit(); err != nil {
			return nil, placementRefused(err)
		}
	}
	if err := reserveShared(ctx, s, s.sessions, ShareSessions, tenant, s.LimitsFor(tenant).MaxSessions); err != nil {
		return nil, err
	}
	req.Policy = pol.applied() // for a remote runtime, the policy in force
	sess, err := img.Runtime.NewSession(ctx, req)
	if err != nil {
		s.sessions.release(tenant)
		if errors.Is(err, sandbox.ErrTooManySessions) {
			return nil, errorf(KindBusy, "too many open sessions; close one or retry later")
		}
		return nil, err
	}
	if p := s.cfg.Placement; p != nil {
		if err := p.Opened(ctx, sess.ID(), tenant); err != nil {
			s.sessions.release(tenant)
			_ = sess.Close()
			return nil, placementRefused(err)
		}
	}
	now := time.Now()
	ss := &Session{s: s, id: sess.ID(), tenant: tenant, sess: sess, img: img, limits: req.Limits.WithSessionDefaults(),
		agentRun: opts.AgentRun, created: now, lastUsed: now, policy: pol}
	s.sessions.commit(tenant, ss.id, ss)
	if e, ok := sess.(ender); ok {
		go func() {
			<-e.Done()
			ss.ended()
			// A session that ended on its own (its interpreter exited, or
			// the runtime killed it) still holds its sandbox: its cgroup
			// and pipes, until closed. No one else will close it now.
			_ = sess.Close()
		}()
	}
	return ss, nil
}

// Session returns tenant's open session id: KindNotFound if there is none
// (or it is another tenant's), KindSessionClosed if it has ended.
func (s *Service) Session(tenant, id string) (*Session, error) {
	return s.sessions.get(tenant, id)
}

// SessionDefaults returns the limits a new session gets for the fields
// its request leaves zero on this service: sandbox.DefaultSessionLimits,
// each lowered to the service's maxima.
func (s *Service) SessionDefaults() sandbox.Limits {
	return sandbox.Limits{}.SessionDefaultsWithin(s.cfg.Maxima).WithSessionDefaults()
}

// Sessions describes tenant's open sessions, newest first.
func (s *Service) Sessions(tenant string) []api.SessionInfo {
	open := s.sessions.list(tenant)
	infos := make([]api.SessionInfo, len(open))
	for i, ss := range open {
		infos[i] = ss.Info()
	}
	return infos
}

// SessionRuntime returns tenant's view of the service as a
// sandbox.SessionRuntime, for an agent: its sessions are the service's,
// their cells recorded and linked to agentRun, and everything they give
// back redacted, as for every caller: cells' output, file names and files
// read, since all of it goes on to a model provider.
func (s *Service) SessionRuntime(tenant, agentRun string) sandbox.SessionRuntime {
	return tenantSessions{s: s, tenant: tenant, agentRun: agentRun}
}

type tenantSessions struct {
	s        *Service
	tenant   string
	agentRun string
	agent    bool // the sessions run a model's code (SessionOptions.Agent)
}

func (t tenantSessions) NewSession(ctx context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	ss, err := t.s.OpenSession(ctx, t.tenant, req, SessionOptions{AgentRun: t.agentRun, Agent: t.agent})
	if err != nil {
		return nil, err
	}
	return ss, nil
}

// ID names the session.
func (ss *Session) ID() string { return ss.id }

// Info describes the session: its image, limits, times and cells.
func (ss *Session) Info() api.SessionInfo {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return api.SessionInfo{ID: ss.id, Language: sandbox.Python, Image: ss.img.Name, ImageDigest: ss.img.Digest,
		Limits: ss.limits, Cells: ss.cells, Restarts: ss.restarts, AgentRun: ss.agentRun, CreatedAt: ss.created, LastUsedAt: ss.lastUsed}
}

// used marks the session used now, by a cell if cell is set, and
// returns the agent run its cells are linked to.
func (ss *Session) used(cell bool) (agentRun string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.lastUsed = time.Now()
	if cell {
		ss.cells++
	}
	return ss.agentRun
}

// restarted counts a restart of the session's interpreter.
func (ss *Session) restarted() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.restarts++
}

// linkAgentRun links the records of the session's next cells to the
// agent run id ("" for none): an analysis's session serves one agent run
// per question.
func (ss *Session) linkAgentRun(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.agentRun = id
}

// Done is closed once the session has ended on any account (closed,
// expired, its interpreter exited or was killed), when its runtime says
// so; it is nil, never ready, for a runtime that does not. A cell that
// ended the session may return before Done is closed: the next operation
// then reports the session closed.
func (ss *Session) Done() <-chan struct{} {
	if e, ok := ss.sess.(ender); ok {
		return e.Done()
	}
	return nil
}

// check turns the session's own errors into the service's: a closed
// session is forgotten and reported as KindSessionClosed; a missing file
// is KindNotFound. The text of the error is redacted.
func (ss *Session) check(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sandbox.ErrSessionClosed):
		ss.ended()
		return errors.Join(errSessionClosed(ss.id), sandbox.ErrSessionClosed)
	}
	err = redactErr(ss.s.cfg.Redactor, err)
	if errors.Is(err, fs.ErrNotExist) {
		return errors.Join(errorf(KindNotFound, "%v", err), fs.ErrNotExist)
	}
	return err
}

// Exec runs cell in the session, as ExecRecorded does, and returns its
// result.
func (ss *Session) Exec(ctx context.Context, cell sandbox.Cell) (sandbox.Result, error) {
	r, err := ss.ExecRecorded(ctx, cell)
	return r.Result, err
}

// ExecRecorded runs cell in the session. Its result is redacted, recorded
// as a run of the session (linked to the agent run, if any) and counted;
// the answer names the record and the session's image. A cell that fails
// is a result, not an error. A cell timeout above the server's maximum
// wall time is an input error naming timeout_ms.
func (ss *Session) ExecRecorded(ctx context.Context, cell sandbox.Cell) (api.RunResponse, error) {
	if err := cell.Validate(); err != nil {
		return api.RunResponse{}, err
	}
	s := ss.s
	if hi := s.cfg.Maxima.WallTimeMS; cell.TimeoutMS > hi {
		return api.RunResponse{}, invalid("timeout_ms", "must be at most %d ms on this server, got %d", hi, cell.TimeoutMS)
	}
	lim := ss.limits
	if cell.TimeoutMS > 0 {
		lim.WallTimeMS = cell.TimeoutMS
	}
	agentRun := ss.used(true)
	rec := s.newRecord(ss.tenant, sandbox.Request{Language: sandbox.Python, Code: cell.Code, Limits: lim}, ss.img)
	rec.SessionID, rec.AgentRun = ss.id, agentRun
	started := time.Now()
	rec.Status, rec.StartedAt = api.StatusRunning, &started
	writes := &recordWrites{s: s}
	writes.create(*rec)
	if cell.OnOutput != nil {
		out := redactedOutput(s.cfg.Redactor, cell.OnOutput)
		cell.OnOutput = out.output
		defer out.flush()
	}
	pol := ss.policy
	if cell.Unchecked {
		pol = codePolicy{}
	}
	cell.Rules = pol.rules()
	res, err := ss.sess.Exec(ctx, cell)
	res.Policy = pol.applied()
	if res.Status == sandbox.StatusBlocked && pol.on() {
		res.Reason = blockedReason(pol, len(res.Findings))
	}
	if err != nil && res.Status == "" {
		res = s.failed(rec, sandbox.StatusInternal, err.Error())
		if errors.Is(err, sandbox.ErrSessionClosed) {
			res.Status, res.Reason = sandbox.StatusKilled, "the session is closed"
		}
		redactions := s.cfg.Redactor.RedactResult(&res).Total() // the reason quotes err
		s.finish(rec, &res, redactions, writes)
		return api.RunResponse{}, ss.check(err)
	}
	if err != nil { // a platform failure that still has a Result
		s.log.Error("session cell failed", "session", ss.id, "err", err)
	}
	if res.Restarted {
		ss.restarted()
	}
	s.met.cells.WithLabelValues(string(res.Status)).Inc()
	redactions := s.cfg.Redactor.RedactResult(&res).Total()
	addHint(&res, ss.img, sandbox.Python, sandbox.NetworkNone) // a session has no network
	s.finish(rec, &res, redactions, writes)
	if observe := ss.cellObserver(); observe != nil && !cell.Unchecked {
		observe(cell.Code, res)
	}
	return api.RunResponse{ID: rec.ID, Image: ss.img.Name, Result: res}, nil
}

// observeCells makes fn the session's observer of the cells that are
// not Unchecked: it is told of each once it ran.
func (ss *Session) observeCells(fn func(code string, res sandbox.Result)) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.observer = fn
}

func (ss *Session) cellObserver() func(code string, res sandbox.Result) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.observer
}

// WriteFile creates or replaces a file in the session's working directory.
func (ss *Session) WriteFile(ctx context.Context, name string, content []byte) error {
	ss.used(false)
	return ss.check(ss.sess.WriteFile(ctx, name, content))
}

// ReadFile returns a file of the session's working directory, redacted
// as artifacts are (policy.Redactor.RedactContent), whoever asks: the
// program wrote it, and a download is as much an answer as its output. A
// file that is not text and holds a secret is refused, KindWithheld.
func (ss *Session) ReadFile(ctx context.Context, name string) ([]byte, error) {
	ss.used(false)
	b, err := ss.sess.ReadFile(ctx, name)
	if err != nil {
		return nil, ss.check(err)
	}
	out, _, err := ss.s.cfg.Redactor.RedactContent(mime.TypeByExtension(path.Ext(name)), b)
	if err != nil {
		return nil, &Error{Kind: KindWithheld, Message: fmt.Sprintf("file %q: %v", name, err), Field: "path", Rule: "must not name a binary file that holds a secret"}
	}
	return out, nil
}

// ListFiles lists the session's working directory, the names redacted:
// the program chose them. A redacted name is shown, not found again: a
// file is read by its real name.
func (ss *Session) ListFiles(ctx context.Context) ([]sandbox.FileInfo, error) {
	ss.used(false)
	files, err := ss.sess.ListFiles(ctx)
	for i := range files {
		files[i].Name, _ = ss.s.cfg.Redactor.RedactString(files[i].Name)
	}
	return files, ss.check(err)
}

// Close ends the session and destroys its sandbox.
func (ss *Session) Close() error {
	err := ss.sess.Close()
	ss.ended()
	return err
}
