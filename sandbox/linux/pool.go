package linux

import (
	"sync"
	"sync/atomic"
	"time"
)

// prestartPool keeps sandboxes built ahead of time, so that a run does not
// wait for namespaces, a cgroup, init's start and the root's mounts. A
// pre-started sandbox is pristine (no request has touched it) and serves
// exactly one run, after which it is destroyed: pooling changes when a
// sandbox is built, never what a run can see. The same pool also keeps
// zygote slots (zygotepool.go), which are not destroyed after a run: each
// comes back after init's reset and serves up to a thousand runs, and is
// retired sooner on an anomaly (zygote.go says what is reset and checked).
//
// A replacement is built when a run ends, not when it begins: building a
// sandbox costs CPU and kernel locks that would otherwise slow the run that
// just took one. Between runs (while an agent thinks) the machine is idle.
type prestartPool struct {
	build func() (*sandboxProc, error)
	// gate, if set, returns a channel closed when a build may start.
	gate      func() <-chan struct{}
	size      int
	ready     chan *sandboxProc
	want      chan struct{} // one token per sandbox to build
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	hits      atomic.Uint64
	misses    atomic.Uint64
	// recycling counts the sandboxes taken that will come back (zygote
	// slots being reset after a run, see zygotepool.go); closed, under
	// closeMu, says that none may come back any more.
	recycling atomic.Int64
	retired   atomic.Uint64
	closeMu   sync.Mutex
	closed    bool
}

// PoolStats describes the pre-started sandboxes of a Runtime.
type PoolStats struct {
	// Size is the number of sandboxes the pool keeps ready.
	Size int `json:"size"`
	// Ready is the number ready now.
	Ready int `json:"ready"`
	// Hits counts runs that took a ready sandbox; Misses counts runs that
	// found none and built their own.
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
	// Retired counts the zygote slots (Options.Warm) that were taken
	// for a run and then destroyed rather than given back: after an
	// anomaly, or at the end of their service.
	Retired uint64 `json:"retired,omitempty"`
}

// refillDelay is how long a replacement waits before it is built.
const refillDelay = 10 * time.Millisecond

// newPool begins keeping size sandboxes made by build ready. Each build
// waits until gate, if not nil, allows it.
func newPool(size int, build func() (*sandboxProc, error), gate func() <-chan struct{}) *prestartPool {
	p := &prestartPool{
		build: build,
		gate:  gate,
		size:  size,
		ready: make(chan *sandboxProc, size),
		want:  make(chan struct{}, size),
		done:  make(chan struct{}),
	}
	for range size {
		p.want <- struct{}{}
	}
	p.wg.Go(p.refill)
	return p
}

// refill builds a sandbox for each token in want until the pool is closed.
// Failures back off, so a broken host does not spin.
func (pool *prestartPool) refill() {
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-pool.want:
		case <-pool.done:
			return
		}
		// Let the caller that just released a sandbox finish its work (the
		// result, the record, the response) before building a replacement
		// takes the CPU.
		select {
		case <-time.After(refillDelay):
		case <-pool.done:
			return
		}
		if pool.gate != nil {
			select {
			case <-pool.gate():
			case <-pool.done:
				return
			}
		}
		p, err := pool.build()
		for err != nil {
			select {
			case <-time.After(backoff):
				backoff = min(2*backoff, 5*time.Second)
				p, err = pool.build()
			case <-pool.done:
				return
			}
		}
		backoff = 10 * time.Millisecond
		p.pool = pool
		select {
		case pool.ready <- p:
		case <-pool.done:
			_ = p.release()
			return
		}
	}
}

// take returns a ready, live sandbox, or nil if none is ready.
func (pool *prestartPool) take() *sandboxProc {
	for {
		select {
		case p, ok := <-pool.ready:
			if p, retry := pool.received(p, ok); !retry {
				return p
			}
		default:
			pool.misses.Add(1)
			return nil
		}
	}
}

// received handles a sandbox received from the ready channel (ok false:
// the pool is closed): a live one is a hit, returned; a dead one is
// replaced and retry is set; a closed pool gives nil.
func (pool *prestartPool) received(p *sandboxProc, ok bool) (_ *sandboxProc, retry bool) {
	if !ok {
		return nil, false
	}
	if !p.alive() {
		pool.replace(p)
		return nil, true
	}
	pool.hits.Add(1)
	return p, false
}

// detach makes p, just taken, no longer the pool's (its end asks for
// nothing) and asks for its replacement now: for a sandbox that outlives
// its request by far, such as a session's.
func (pool *prestartPool) detach(p *sandboxProc) {
	p.pool = nil
	select {
	case pool.want <- struct{}{}:
	default:
	}
}

// replace destroys a pooled sandbox and asks for another.
func (pool *prestartPool) replace(p *sandboxProc) error {
	err := p.release()
	select {
	case pool.want <- struct{}{}:
	default:
	}
	return err
}

// stats reports the pool.
func (pool *prestartPool) stats() PoolStats {
	if pool == nil {
		return PoolStats{}
	}
	return PoolStats{Size: pool.size, Ready: len(pool.ready), Hits: pool.hits.Load(), Misses: pool.misses.Load(), Retired: pool.retired.Load()}
}

// close destroys the ready sandboxes and stops building more.
func (pool *prestartPool) close() {
	if pool == nil {
		return
	}
	pool.closeOnce.Do(func() {
		close(pool.done)
		pool.wg.Wait()
		pool.awaitRecycled()
		pool.closeMu.Lock()
		pool.closed = true
		close(pool.ready)
		pool.closeMu.Unlock()
		for p := range pool.ready {
			_ = p.release()
		}
	})
}

// acquire returns a built sandbox with limits lim: a pre-started one when
// there is one, else one built now.
func (r *Runtime) acquire(lim cgroupLimits) (*sandboxProc, error) {
	if r.pool != nil {
		if p := r.pool.take(); p != nil {
			if err := p.cg.setLimits(lim); err != nil {
				_ = r.retire(p)
				return nil, err
			}
			return p, nil
		}
	}
	return r.launch(lim)
}

// retire destroys a sandbox after its run and, if it came from a pool,
// asks for a replacement.
func (r *Runtime) retire(p *sandboxProc) error {
	if p.pool != nil {
		return p.pool.replace(p)
	}
	return p.release()
}

// PoolStats reports the pool of pre-started sandboxes; all zero without one.
func (r *Runtime) PoolStats() PoolStats { return r.pool.stats() }

// WarmStats reports the pool of warm Python sandboxes; all zero without one.
func (r *Runtime) WarmStats() PoolStats { return r.warm.stats() }

// WarmSessionStats reports the pool of warm sessions (Options.WarmSessions):
// Hits counts sessions that took one, Misses sessions that fitted one but
// found none ready; all zero without the pool.
func (r *Runtime) WarmSessionStats() PoolStats { return r.warmSessions.stats() }

// Close closes every session, destroys the sandboxes kept ready and stops
// building more. Runs in progress are not affected (Close waits for those
// in zygote slots to end, and destroys their slots); Run may still be
// called and builds sandboxes on demand.
func (r *Runtime) Close() error {
	for _, s := range r.sessions.all() {
		_ = s.Close()
	}
	r.pool.close()
	r.warm.close()
	r.warmSessions.close()
	return nil
}
