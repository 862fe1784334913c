package linux

import (
	"sync"
	"time"
)

// prestartPool keeps sandboxes built ahead of time, so that a run does not
// wait for namespaces, a cgroup, init's start and the root's mounts. Each
// pooled sandbox is pristine (no request has touched it) and serves exactly
// one run, after which it is destroyed: pooling changes when a sandbox is
// built, never what a run can see.
type prestartPool struct {
	ready     chan *sandboxProc
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// startPool begins keeping size sandboxes ready, built with the default
// limits; a run with other limits has its cgroup adjusted when it takes one.
func (r *Runtime) startPool(size int) {
	r.pool = &prestartPool{ready: make(chan *sandboxProc, size), done: make(chan struct{})}
	r.pool.wg.Go(r.refill)
}

// refill builds sandboxes until the pool is closed, blocking while it is
// full. Failures back off, so a broken host does not spin.
func (r *Runtime) refill() {
	backoff := 10 * time.Millisecond
	for {
		p, err := r.launch(r.defaultCgroupLimits)
		if err != nil {
			select {
			case <-time.After(backoff):
				backoff = min(2*backoff, 5*time.Second)
				continue
			case <-r.pool.done:
				return
			}
		}
		backoff = 10 * time.Millisecond
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
	if r.pool != nil {
		for {
			select {
			case p, ok := <-r.pool.ready:
				if !ok { // closed: build on demand
					return r.launch(lim)
				}
				if !p.alive() {
					_ = p.release()
					continue
				}
				if err := p.cg.setLimits(lim); err != nil {
					_ = p.release()
					return nil, err
				}
				return p, nil
			default:
			}
			break
		}
	}
	return r.launch(lim)
}

// Close destroys the sandboxes kept ready and stops building more. Runs in
// progress are not affected; Run may still be called and builds sandboxes
// on demand.
func (r *Runtime) Close() error {
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
