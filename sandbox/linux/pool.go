package linux

import (
	"sync"
	"sync/atomic"
	"time"
)

// prestartPool keeps sandboxes built ahead of time, so that a run does not
// wait for namespaces, a cgroup, init's start and the root's mounts. Each
// pooled sandbox is pristine (no request has touched it) and serves exactly
// one run, after which it is destroyed: pooling changes when a sandbox is
// built, never what a run can see.
//
// A replacement is built when a run ends, not when it begins: building a
// sandbox costs CPU and kernel locks that would otherwise slow the run that
// just took one. Between runs (while an agent thinks) the machine is idle.
type prestartPool struct {
	size      int
	ready     chan *sandboxProc
	want      chan struct{} // one token per sandbox to build
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	hits      atomic.Uint64
	misses    atomic.Uint64
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
}

// startPool begins keeping size sandboxes ready, built with the default
// limits; a run with other limits has its cgroup adjusted when it takes one.
func (r *Runtime) startPool(size int) {
	p := &prestartPool{
		size:  size,
		ready: make(chan *sandboxProc, size),
		want:  make(chan struct{}, size),
		done:  make(chan struct{}),
	}
	for range size {
		p.want <- struct{}{}
	}
	r.pool = p
	p.wg.Go(r.refill)
}

// refill builds a sandbox for each token in want until the pool is closed.
// Failures back off, so a broken host does not spin.
func (r *Runtime) refill() {
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-r.pool.want:
		case <-r.pool.done:
			return
		}
		p, err := r.launch(r.defaultCgroupLimits)
		for err != nil {
			select {
			case <-time.After(backoff):
				backoff = min(2*backoff, 5*time.Second)
				p, err = r.launch(r.defaultCgroupLimits)
			case <-r.pool.done:
				return
			}
		}
		backoff = 10 * time.Millisecond
		p.pooled = true
		select {
		case r.pool.ready <- p:
		case <-r.pool.done:
			_ = p.release()
			return
		}
	}
}

// acquire returns a ready sandbox with limits lim: a pooled one when there
// is one, else one built now.
func (r *Runtime) acquire(lim cgroupLimits) (*sandboxProc, error) {
	if r.pool == nil {
		return r.launch(lim)
	}
	for {
		select {
		case p, ok := <-r.pool.ready:
			if !ok { // the pool is closed: build on demand
				return r.launch(lim)
			}
			if !p.alive() {
				r.retire(p)
				continue
			}
			if err := p.cg.setLimits(lim); err != nil {
				r.retire(p)
				return nil, err
			}
			r.pool.hits.Add(1)
			return p, nil
		default:
			r.pool.misses.Add(1)
			return r.launch(lim)
		}
	}
}

// retire destroys a sandbox after its run and, if it came from the pool,
// asks for a replacement.
func (r *Runtime) retire(p *sandboxProc) error {
	err := p.release()
	if p.pooled {
		select {
		case r.pool.want <- struct{}{}:
		default:
		}
	}
	return err
}

// PoolStats reports the pool of pre-started sandboxes; all zero without one.
func (r *Runtime) PoolStats() PoolStats {
	if r.pool == nil {
		return PoolStats{}
	}
	return PoolStats{Size: r.pool.size, Ready: len(r.pool.ready), Hits: r.pool.hits.Load(), Misses: r.pool.misses.Load()}
}

// Close closes every session, destroys the sandboxes kept ready and stops
// building more. Runs in progress are not affected; Run may still be
// called and builds sandboxes on demand.
func (r *Runtime) Close() error {
	for _, s := range r.sessions.all() {
		_ = s.Close()
	}
	if r.pool == nil {
		return nil
	}
	r.pool.closeOnce.Do(func() {
		close(r.pool.done)
		r.pool.wg.Wait()
		close(r.pool.ready)
		for p := range r.pool.ready {
			_ = p.release()
		}
	})
	return nil
}
