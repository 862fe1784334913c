package linux

import (
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Session bounds, when Options leave them zero.
const (
	defaultMaxSessions = 16
	defaultIdleTimeout = 15 * time.Minute
	reapInterval       = 10 * time.Second
)

// sessionTable holds a Runtime's open sessions, caps their number, and
// closes those idle past the timeout.
type sessionTable struct {
	mu       sync.Mutex
	open     map[string]*Session
	reserved int
	max      int
	idle     time.Duration
	reaping  bool
	lastUsed map[*Session]time.Time
}

func newSessionTable(max int, idle time.Duration) *sessionTable {
	if max <= 0 {
		max = defaultMaxSessions
	}
	if idle <= 0 {
		idle = defaultIdleTimeout
	}
	return &sessionTable{open: map[string]*Session{}, lastUsed: map[*Session]time.Time{}, max: max, idle: idle}
}

// reserve claims a place for a session being started.
func (t *sessionTable) reserve() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.open)+t.reserved >= t.max {
		return sandbox.ErrTooManySessions
	}
	t.reserved++
	return nil
}

func (t *sessionTable) unreserve() {
	t.mu.Lock()
	t.reserved--
	t.mu.Unlock()
}

// add turns a reservation into an open session.
func (t *sessionTable) add(s *Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
	t.open[s.id] = s
	t.lastUsed[s] = time.Now()
	if !t.reaping {
		t.reaping = true
		go t.reap()
	}
}

func (t *sessionTable) remove(s *Session) {
	t.mu.Lock()
	delete(t.open, s.id)
	delete(t.lastUsed, s)
	t.mu.Unlock()
}

func (t *sessionTable) touch(s *Session) {
	t.mu.Lock()
	if _, ok := t.lastUsed[s]; ok {
		t.lastUsed[s] = time.Now()
	}
	t.mu.Unlock()
}

func (t *sessionTable) get(id string) (*Session, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.open[id]
	return s, ok
}

func (t *sessionTable) all() []*Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Session, 0, len(t.open))
	for _, s := range t.open {
		out = append(out, s)
	}
	return out
}

// reap closes idle sessions until none is left open.
func (t *sessionTable) reap() {
	for {
		time.Sleep(min(reapInterval, t.idle/2))
		t.mu.Lock()
		var idle []*Session
		for s, used := range t.lastUsed {
			if time.Since(used) > t.idle {
				idle = append(idle, s)
			}
		}
		if len(t.open) == 0 && t.reserved == 0 {
			t.reaping = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		for _, s := range idle {
			// Each session is closed on its own: however long one takes,
			// it cannot keep the others, of any tenant, from expiring.
			if s.expiring.CompareAndSwap(false, true) {
				go t.expire(s)
			}
		}
	}
}

// expire closes an idle session, unless a cell is running in it.
func (t *sessionTable) expire(s *Session) {
	defer s.expiring.Store(false)
	if s.cellMu.TryLock() { // a running cell is not idle
		_ = s.Close()
		s.cellMu.Unlock()
	}
}

// Session returns the open session called id.
func (r *Runtime) Session(id string) (sandbox.Session, bool) {
	s, ok := r.sessions.get(id)
	if !ok {
		return nil, false
	}
	return s, true
}
