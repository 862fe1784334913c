package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxClosedSessions bounds how many closed session IDs are remembered, to
// tell a closed session (KindSessionClosed) from an unknown one.
const maxClosedSessions = 4096

// registry is the one table of the sessions the service opened: who owns
// each, how many each tenant holds, and which have ended. A session that
// ends on its own (idle expiry, its interpreter died) is noticed when it
// says so (its Done channel) or when an operation on it reports it closed;
// nothing polls.
type registry struct {
	max int

	mu          sync.Mutex
	open        map[string]*Session
	opening     map[string]int // tenant → sessions being created
	perTenant   map[string]int // tenant → open sessions
	closed      map[string]string
	closedOrder []string // oldest first
	opened      uint64   // sessions opened so far, for their order
}

func newRegistry(max int) *registry {
	return &registry{max: max, open: map[string]*Session{}, opening: map[string]int{},
		perTenant: map[string]int{}, closed: map[string]string{}}
}

// reserve counts a session tenant is about to open, unless the tenant
// already holds tenantMax or the service its maximum.
func (r *registry) reserve(tenant string, tenantMax int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := len(r.open)
	for _, n := range r.opening {
		total += n
	}
	if n := r.perTenant[tenant] + r.opening[tenant]; n >= tenantMax {
		return errorf(KindBusy, "tenant %q already has %d open sessions, its share; close one or retry later", tenant, n)
	}
	if total >= r.max {
		return errorf(KindBusy, "too many open sessions; close one or retry later")
	}
	r.opening[tenant]++
	return nil
}

// unreserve gives back a reservation; if s is not nil, it is now open.
func (r *registry) unreserve(tenant string, s *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opening[tenant]--; r.opening[tenant] <= 0 {
		delete(r.opening, tenant)
	}
	if s != nil {
		r.opened++
		s.seq = r.opened
		r.open[s.id] = s
		r.perTenant[tenant]++
	}
}

// ended forgets the open session id and remembers it as closed.
func (r *registry) ended(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.open[id]
	if !ok {
		return
	}
	delete(r.open, id)
	if r.perTenant[s.tenant]--; r.perTenant[s.tenant] <= 0 {
		delete(r.perTenant, s.tenant)
	}
	r.closed[id] = s.tenant
	r.closedOrder = append(r.closedOrder, id)
	if len(r.closedOrder) > maxClosedSessions {
		delete(r.closed, r.closedOrder[0])
		r.closedOrder = r.closedOrder[1:]
	}
}

// get returns tenant's open session id. Another tenant's session is
// KindNotFound like a missing one, so that IDs reveal nothing across
// tenants.
func (r *registry) get(tenant, id string) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.open[id]; ok && s.tenant == tenant {
		return s, nil
	}
	if owner, ok := r.closed[id]; ok && owner == tenant {
		return nil, errSessionClosed(id)
	}
	return nil, errorf(KindNotFound, "no session %q", id)
}

// list returns tenant's open sessions, newest first.
func (r *registry) list(tenant string) []*Session {
	r.mu.Lock()
	var mine []*Session
	for _, s := range r.open {
		if s.tenant == tenant {
			mine = append(mine, s)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(mine, func(a, b *Session) int { return cmp.Compare(b.seq, a.seq) })
	return mine
}

// active counts the open sessions.
func (r *registry) active() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return float64(len(r.open))
}

// closeAll closes every open session.
func (r *registry) closeAll() {
	r.mu.Lock()
	all := make([]*Session, 0, len(r.open))
	for _, s := range r.open {
		all = append(all, s)
	}
	r.mu.Unlock()
	for _, s := range all {
		_ = s.Close()
	}
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
	seq     uint64 // its place in the order sessions were opened
	policy  codePolicy

	mu       sync.Mutex
	lastUsed time.Time
	cells    int
	agentRun string
}

var _ sandbox.Session = (*Session)(nil)

// ender is a session that says when it has ended on its own.
type ender interface{ Done() <-chan struct{} }

// OpenSession starts a session for tenant in the image req names (the
// default for none), within the tenant's share and the service's maximum
// of open sessions. An empty language is Python, and an alias of it
// ("py") is resolved, as for a run.
func (s *Service) OpenSession(ctx context.Context, tenant string, req sandbox.SessionRequest, opts SessionOptions) (*Session, error) {
	req.Language = req.Language.Canonical()
	if err := req.Validate(); err != nil {
		return nil, err
	}
	img, err := s.image(req.Image)
	if err != nil {
		return nil, err
	}
	req.Image = "" // the runtime is the image's: it runs in no other
	if err := s.validLimits(&req.Limits); err != nil {
		return nil, err
	}
	pol, err := s.policyFor(tenant, req.Policy, opts.AgentRun != "" || opts.Agent)
	if err != nil {
		return nil, err
	}
	if err := s.sessions.reserve(tenant, s.LimitsFor(tenant).MaxSessions); err != nil {
		return nil, err
	}
	req.Policy = pol.applied() // for a remote runtime, the policy in force
	sess, err := img.Runtime.NewSession(ctx, req)
	if err != nil {
		s.sessions.unreserve(tenant, nil)
		if errors.Is(err, sandbox.ErrTooManySessions) {
			return nil, errorf(KindBusy, "too many open sessions; close one or retry later")
		}
		return nil, err
	}
	now := time.Now()
	ss := &Session{s: s, id: sess.ID(), tenant: tenant, sess: sess, img: img, limits: req.Limits.WithDefaults(),
		agentRun: opts.AgentRun, created: now, lastUsed: now, policy: pol}
	s.sessions.unreserve(tenant, ss)
	if e, ok := sess.(ender); ok {
		go func() {
			<-e.Done()
			s.sessions.ended(ss.id)
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
		Limits: ss.limits, Cells: ss.cells, AgentRun: ss.agentRun, CreatedAt: ss.created, LastUsedAt: ss.lastUsed}
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
		ss.s.sessions.ended(ss.id)
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
	s.met.cells.WithLabelValues(string(res.Status)).Inc()
	redactions := s.cfg.Redactor.RedactResult(&res).Total()
	addHint(&res, ss.img, sandbox.Python, sandbox.NetworkNone) // a session has no network
	s.finish(rec, &res, redactions, writes)
	return api.RunResponse{ID: rec.ID, Image: ss.img.Name, Result: res}, nil
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
	ss.s.sessions.ended(ss.id)
	return err
}
