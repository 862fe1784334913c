package e2bapi

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/service"
)

// The headers of a data-plane request.
const (
	headerSandboxID   = "E2b-Sandbox-Id"
	headerSandboxPort = "E2b-Sandbox-Port"
	// headerAccessToken carries envdAccessToken (envd, and /execute).
	headerAccessToken = "X-Access-Token"
	// headerTrafficToken carries trafficAccessToken (the code
	// interpreter's calls; /contexts sends only this one).
	headerTrafficToken = "E2b-Traffic-Access-Token"
)

// sandboxEntry is one E2B sandbox: a session of the service and what E2B
// says about it.
type sandboxEntry struct {
	id         string // the session's ID, so that its records are found by it
	owner      string // the tenant
	templateID string
	sess       *service.Session
	// token authorises the data plane: 256 random bits, compared in
	// constant time, never logged.
	token     string
	env       map[string]string
	metadata  map[string]string
	startedAt time.Time

	mu       sync.Mutex
	endAt    time.Time
	timer    *time.Timer
	closed   bool
	contexts contextTable
}

// session returns the service session the sandbox is.
func (e *sandboxEntry) session() *service.Session { return e.sess }

// envVars returns the sandbox's environment variables (envVars of its
// creation), a copy: what envd's process.Start adds to a command's
// environment, as the session's kernel has them.
func (e *sandboxEntry) envVars() map[string]string { return maps.Clone(e.env) }

// tenant returns the tenant the sandbox belongs to.
func (e *sandboxEntry) tenant() string { return e.owner }

// end returns when the sandbox's timeout ends it.
func (e *sandboxEntry) end() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.endAt
}

// sandboxTable holds the live sandboxes, by ID.
type sandboxTable struct {
	mu sync.Mutex
	m  map[string]*sandboxEntry
}

func (t *sandboxTable) add(e *sandboxEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[e.id] = e
}

func (t *sandboxTable) get(id string) *sandboxEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// remove forgets e, if it is still the one under its ID.
func (t *sandboxTable) remove(e *sandboxEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[e.id] == e {
		delete(t.m, e.id)
	}
}

// of returns tenant's sandboxes, oldest first.
func (t *sandboxTable) of(tenant string) []*sandboxEntry {
	t.mu.Lock()
	var list []*sandboxEntry
	for _, e := range t.m {
		if e.owner == tenant {
			list = append(list, e)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(list, func(a, b *sandboxEntry) int { return a.startedAt.Compare(b.startedAt) })
	return list
}

// newToken returns a fresh access token: 256 random bits in hex.
func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// register adds a sandbox for sess and arms its timeout; the sandbox is
// forgotten when its session ends on its own (its Done channel).
func (h *Handler) register(e *sandboxEntry, timeout time.Duration) {
	e.contexts = newContextTable()
	e.endAt = time.Now().Add(timeout)
	e.timer = time.AfterFunc(timeout, func() { h.expire(e) })
	h.sandboxes.add(e)
	if done := e.sess.Done(); done != nil {
		go func() {
			<-done
			h.close(e)
		}()
	}
}

// expire ends e when its timeout has passed (a timer that fired as the
// timeout was extended does nothing).
func (h *Handler) expire(e *sandboxEntry) {
	e.mu.Lock()
	due := !time.Now().Before(e.endAt)
	e.mu.Unlock()
	if due {
		h.close(e)
	}
}

// close forgets e and closes its session, once.
func (h *Handler) close(e *sandboxEntry) {
	if h.detach(e) {
		h.closeSession(e)
	}
}

// detach forgets e: from now on no request reaches it. It reports
// whether this call did it (and so must close its session).
func (h *Handler) detach(e *sandboxEntry) bool {
	h.sandboxes.remove(e)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.closed = true
	e.timer.Stop()
	return true
}

// closeSession closes e's session, which destroys its sandbox.
func (h *Handler) closeSession(e *sandboxEntry) {
	if err := e.sess.Close(); err != nil {
		h.log.Warn("e2b: close sandbox", "sandbox", e.id, "err", err)
	}
}

// extend sets e's timeout to end d from now; with onlyLonger, only if
// that is later than its present end (connect never shortens a
// sandbox's life). It reports false when e is already closed.
func (e *sandboxEntry) extend(d time.Duration, onlyLonger bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	end := time.Now().Add(d)
	if onlyLonger && end.Before(e.endAt) {
		return true
	}
	e.endAt = end
	e.timer.Reset(d)
	return true
}

// alive returns the sandbox id names for a control-plane request of
// tenant, or nil: none, another tenant's (so that IDs reveal nothing),
// or one whose session has ended (then forgotten).
func (h *Handler) alive(tenant, id string) *sandboxEntry {
	e := h.sandboxes.get(id)
	if e == nil || e.owner != tenant {
		return nil
	}
	if _, err := h.svc.Session(tenant, id); err != nil {
		h.close(e)
		return nil
	}
	return e
}

// errGone answers a data-plane request for a sandbox that does not run
// (any more): 502, as E2B's proxy answers it, which the SDKs read as "the
// sandbox is not running" (its timeout passed, or it was killed).
func errGone(id string) *apiError {
	return errorf(http.StatusBadGateway, "sandbox %q is not running: it was killed, its timeout passed, or it never existed", id)
}

// sandboxOf returns the sandbox a data-plane request is for: the one its
// E2b-Sandbox-Id header names, if the request carries that sandbox's
// access token (X-Access-Token or E2B-Traffic-Access-Token; each one sent
// must match). The error is an *apiError: 502 for a sandbox that does not
// run, 401 for a missing or wrong token.
//
// Security: the token is the only credential of the data plane (the SDKs
// send no API key there), so a sandbox of another tenant is reached only
// with its token, which only its creator (or whoever connected to it with
// a key of its tenant) was given. Tokens are compared in constant time.
func (h *Handler) sandboxOf(r *http.Request) (*sandboxEntry, error) {
	id := r.Header.Get(headerSandboxID)
	e := h.sandboxes.get(id)
	if e == nil {
		return nil, errGone(id)
	}
	sent := 0
	for _, name := range []string{headerAccessToken, headerTrafficToken} {
		for _, v := range tokensIn(r.Header.Values(name)) {
			sent++
			if subtle.ConstantTimeCompare([]byte(v), []byte(e.token)) != 1 {
				return nil, &apiError{Code: http.StatusUnauthorized, Field: name, Rule: "must be the sandbox's access token",
					Message: fmt.Sprintf("the access token in %s is not sandbox %s's", name, id)}
			}
		}
	}
	if sent == 0 {
		return nil, &apiError{Code: http.StatusUnauthorized, Field: headerAccessToken, Rule: "must be sent, holding the sandbox's access token",
			Message: "the request carries no access token: send the sandbox's envdAccessToken as " + headerAccessToken}
	}
	if _, err := h.svc.Session(e.owner, id); err != nil {
		h.close(e)
		return nil, errGone(id)
	}
	return e, nil
}

// tokensIn splits a header's values into the tokens sent: a client that
// appends a header twice (fetch's Headers.append) joins them with ", ".
func tokensIn(values []string) []string {
	var out []string
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(t))
		}
	}
	return out
}
