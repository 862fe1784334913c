package linux

import (
	"context"
	"time"
)

// A zygote slot serves many runs: after each it is reset and given back
// to the pool it came from, rather than replaced. These are the pool's
// operations for that.

// takeSoon returns a ready, live sandbox, or nil if none is ready and
// none is being recycled. If one is being recycled it waits for a sandbox
// at most wait (a reset takes a few milliseconds; a run served by a slot
// of another kind costs more) or until ctx ends.
func (pool *prestartPool) takeSoon(ctx context.Context, wait time.Duration) *sandboxProc {
	var timeout <-chan time.Time
	for {
		select {
		case p, ok := <-pool.ready:
			if p, retry := pool.received(p, ok); !retry {
				return p
			}
			continue
		default:
		}
		if pool.recycling.Load() == 0 {
			pool.misses.Add(1)
			return nil
		}
		if timeout == nil {
			timer := time.NewTimer(wait)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case p, ok := <-pool.ready:
			if p, retry := pool.received(p, ok); !retry {
				return p
			}
			continue
		case <-timeout:
			pool.misses.Add(1)
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// willRecycle counts p, just taken, as one that will come back (recycle
// or discard); close waits for it.
func (pool *prestartPool) willRecycle() { pool.recycling.Add(1) }

// recycle gives p, reset after its run, back to the ready sandboxes; if
// the pool is closed (or full), p is released instead.
func (pool *prestartPool) recycle(p *sandboxProc) {
	defer pool.recycling.Add(-1)
	pool.closeMu.Lock()
	defer pool.closeMu.Unlock()
	if !pool.closed {
		select {
		case pool.ready <- p:
			return
		default:
		}
	}
	pool.report.recycleFailed(p.release())
}

// awaitRecycled waits until no sandbox taken is still to come back.
func (pool *prestartPool) awaitRecycled() {
	for pool.recycling.Load() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
}

// discard releases p, taken for a run after which it cannot serve
// another because of why (see retireFor), and asks for its replacement;
// the retirement is counted and logged, as an error releasing p is.
func (pool *prestartPool) discard(p *sandboxProc, why error) {
	defer pool.recycling.Add(-1)
	pool.report.retired(why)
	_ = pool.replace(p)
}
