package service

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// registry is the one table of the things of a kind the service holds
// for its tenants (sessions, agent runs, analyses), each under its ID:
// who owns each, how many each tenant holds live against its share, the
// ended ones kept for a while (retain, retainFor), and the IDs of those
// forgotten (a bounded number), to tell an ended thing from an unknown
// one. Another tenant's is not found like a missing one, so that IDs
// reveal nothing across tenants.
type registry[T any] struct {
	cfg registryConfig

	mu          sync.Mutex
	shut        bool
	items       map[string]*entry[T] // live, and ended ones retained
	reserved    map[string]int       // tenant → being opened
	live        map[string]int       // tenant → live
	total       int                  // live, all tenants
	ended       []*entry[T]          // retained, oldest first
	closed      map[string]string    // forgotten ID → tenant
	closedOrder []string             // oldest first
	seq         uint64               // items added so far, for their order
	drained     chan struct{}        // after shutdown: closed once none is live
	// shares are the releases of tenants' cluster-wide shares
	// (shares.go): one per thing reserved or live that took one. They
	// are interchangeable (each gives one of the tenant's back), so
	// release and end give back any one of the tenant's.
	shares map[string][]func()
}

// registryConfig is what tells one kind's registry from another's: its
// bounds and its refusals' words.
type registryConfig struct {
	// max bounds the live things (and those being opened), all tenants
	// together; 0 bounds nothing.
	max int
	// retain ended things are kept, for retainFor, found and listed;
	// older ones are forgotten.
	retain    int
	retainFor time.Duration
	// remember is how many forgotten IDs are remembered, so that get
	// says closed (closedErr) rather than not found.
	remember int
	// The refusals: no such ID; an ID forgotten but remembered; a
	// tenant's share (n held of max) or the service's maximum taken.
	notFound   func(id string) error
	closedErr  func(id string) error
	tenantFull func(tenant string, n, max int) error
	full       func() error
}

// entry is one thing of a registry.
type entry[T any] struct {
	v          T
	id, tenant string
	seq        uint64    // its place in the order things were added
	ended      time.Time // zero while live
}

// maxClosedIDs bounds how many forgotten session and analysis IDs are
// remembered, to tell a closed one (KindSessionClosed) from an unknown
// one.
const maxClosedIDs = 4096

func newRegistry[T any](cfg registryConfig) *registry[T] {
	return &registry[T]{cfg: cfg, items: map[string]*entry[T]{}, reserved: map[string]int{},
		live: map[string]int{}, closed: map[string]string{}, shares: map[string][]func(){}}
}

// reserve counts a thing tenant is about to open, unless the service is
// shutting down, the tenant already holds tenantMax or the service its
// maximum. Give it back with release, or make it live with commit.
func (r *registry[T]) reserve(tenant string, tenantMax int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reserveLocked(tenant, tenantMax)
}

func (r *registry[T]) reserveLocked(tenant string, tenantMax int) error {
	total := r.total
	for _, n := range r.reserved {
		total += n
	}
	switch n := r.live[tenant] + r.reserved[tenant]; {
	case r.shut:
		return errShuttingDown
	case n >= tenantMax:
		return r.cfg.tenantFull(tenant, n, tenantMax)
	case r.cfg.max > 0 && total >= r.cfg.max:
		return r.cfg.full()
	}
	r.reserved[tenant]++
	return nil
}

// release gives back a reservation of tenant's, and its cluster-wide
// share if it took one.
func (r *registry[T]) release(tenant string) {
	r.mu.Lock()
	r.releaseLocked(tenant)
	share := r.dropShareLocked(tenant)
	r.mu.Unlock()
	if share != nil {
		share()
	}
}

// unreserve gives back a reservation of tenant's that took no
// cluster-wide share (it was refused one).
func (r *registry[T]) unreserve(tenant string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.releaseLocked(tenant)
}

// holdShare keeps release, the cluster-wide share a reservation of
// tenant's took (nil: none), until the reservation is released or its
// thing ends.
func (r *registry[T]) holdShare(tenant string, release func()) {
	if release == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shares[tenant] = append(r.shares[tenant], release)
}

// dropShareLocked takes one of tenant's shares' releases out, nil if it
// holds none; r.mu is held.
func (r *registry[T]) dropShareLocked(tenant string) func() {
	held := r.shares[tenant]
	if len(held) == 0 {
		return nil
	}
	release := held[len(held)-1]
	if len(held) == 1 {
		delete(r.shares, tenant)
	} else {
		r.shares[tenant] = held[:len(held)-1]
	}
	return release
}

func (r *registry[T]) releaseLocked(tenant string) {
	if r.reserved[tenant]--; r.reserved[tenant] <= 0 {
		delete(r.reserved, tenant)
	}
}

// commit makes a reservation of tenant's the live thing v, under id.
func (r *registry[T]) commit(tenant, id string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commitLocked(tenant, id, v)
}

func (r *registry[T]) commitLocked(tenant, id string, v T) {
	r.releaseLocked(tenant)
	r.seq++
	r.items[id] = &entry[T]{v: v, id: id, tenant: tenant, seq: r.seq}
	r.live[tenant]++
	r.total++
}

// commitOpen is commit, unless the registry is shutting down: then the
// reservation is released (with its share) and it says so.
func (r *registry[T]) commitOpen(tenant, id string, v T) error {
	r.mu.Lock()
	if r.shut {
		r.mu.Unlock()
		r.release(tenant)
		return errShuttingDown
	}
	defer r.mu.Unlock()
	r.commitLocked(tenant, id, v)
	return nil
}

// add holds v, tenant's, under id, as reserve and commit do together.
func (r *registry[T]) add(tenant, id string, v T, tenantMax int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.reserveLocked(tenant, tenantMax); err != nil {
		return err
	}
	r.commitLocked(tenant, id, v)
	return nil
}

// end marks the live thing id ended: it no longer counts against its
// tenant's share (its cluster-wide share, if it took one, is given back);
// it is kept as the retention says, then forgotten (its ID remembered).
// Ending what is not live does nothing.
func (r *registry[T]) end(id string) {
	r.mu.Lock()
	e, ok := r.items[id]
	if !ok || !e.ended.IsZero() {
		r.mu.Unlock()
		return
	}
	share := r.dropShareLocked(e.tenant)
	r.endLocked(e)
	r.mu.Unlock()
	if share != nil {
		share() // outside the lock: it may ask the cluster
	}
}

// endLocked marks the live thing e ended; r.mu is held.
func (r *registry[T]) endLocked(e *entry[T]) {
	e.ended = time.Now()
	if r.live[e.tenant]--; r.live[e.tenant] <= 0 {
		delete(r.live, e.tenant)
	}
	r.total--
	r.ended = append(r.ended, e)
	r.expire(e.ended)
	if r.total == 0 && r.drained != nil {
		close(r.drained)
		r.drained = nil
	}
}

// expire forgets the ended things beyond the retention, remembering
// their IDs; r.mu is held.
func (r *registry[T]) expire(now time.Time) {
	n := 0
	for n < len(r.ended) && (len(r.ended)-n > r.cfg.retain || now.Sub(r.ended[n].ended) > r.cfg.retainFor) {
		e := r.ended[n]
		delete(r.items, e.id)
		if r.cfg.remember > 0 {
			r.closed[e.id] = e.tenant
			r.closedOrder = append(r.closedOrder, e.id)
			if len(r.closedOrder) > r.cfg.remember {
				delete(r.closed, r.closedOrder[0])
				r.closedOrder = r.closedOrder[1:]
			}
		}
		n++
	}
	r.ended = slices.Delete(r.ended, 0, n)
}

// get returns tenant's thing id, live or retained.
func (r *registry[T]) get(tenant, id string) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(time.Now())
	if e, ok := r.items[id]; ok && e.tenant == tenant {
		return e.v, nil
	}
	var zero T
	if owner, ok := r.closed[id]; ok && owner == tenant {
		return zero, r.cfg.closedErr(id)
	}
	return zero, r.cfg.notFound(id)
}

// list returns tenant's things, live and retained, newest first.
func (r *registry[T]) list(tenant string) []T {
	r.mu.Lock()
	r.expire(time.Now())
	var mine []*entry[T]
	for _, e := range r.items {
		if e.tenant == tenant {
			mine = append(mine, e)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(mine, func(a, b *entry[T]) int { return cmp.Compare(b.seq, a.seq) })
	out := make([]T, len(mine))
	for i, e := range mine {
		out[i] = e.v
	}
	return out
}

// active counts the live things, all tenants, for a gauge.
func (r *registry[T]) active() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return float64(r.total)
}

// liveItems returns the live things, all tenants.
func (r *registry[T]) liveItems() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.liveLocked()
}

func (r *registry[T]) liveLocked() []T {
	var all []T
	for _, e := range r.items {
		if e.ended.IsZero() {
			all = append(all, e.v)
		}
	}
	return all
}

// shutdown stops admitting things (errShuttingDown) and returns the live
// ones; drained is closed once they have all ended.
func (r *registry[T]) shutdown() (live []T, drained <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shut = true
	done := make(chan struct{})
	if r.total == 0 {
		close(done)
	} else if r.drained == nil {
		r.drained = done
	} else {
		done = r.drained
	}
	return r.liveLocked(), done
}
