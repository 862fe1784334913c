package linux

import (
	"context"
	"log/slog"
	"time"
)

// recyclePool keeps zygote slots (Options.Warm): a slot serves many runs,
// and after each it is reset and given back to the pool (put with why
// nil) rather than replaced, or retired after an anomaly or at the end of
// its service (put with why) and replaced. A take waits at most wait for
// a slot being reset.
type recyclePool[S pooled] struct {
	*readyPool[S]
	wait time.Duration
}

// newRecyclePool begins keeping size slots made by build ready, as the
// pool called name (see newPool).
func newRecyclePool[S pooled](name string, size int, build func() (S, error), wait time.Duration, log *slog.Logger) recyclePool[S] {
	return recyclePool[S]{newPool(name, size, build, nil, log), wait}
}

// take returns a ready slot (see takeSoon), counted as one that will come
// back: close waits for its put.
func (pool recyclePool[S]) take(ctx context.Context) (S, bool) {
	s, ok := pool.takeSoon(ctx, pool.wait)
	if ok {
		pool.willRecycle()
	}
	return s, ok
}

// put gives s, taken, back after its run if why is nil (s has been
// reset), and otherwise retires it because of why and asks for its
// replacement.
func (pool recyclePool[S]) put(s S, why error) error {
	if why != nil {
		pool.discard(s, why)
		return nil
	}
	pool.recycle(s)
	return nil
}

// The operations below are readyPool's; only a recyclePool uses them.

// takeSoon returns a ready, live sandbox, or false if none is ready and
// none is being recycled. If one is being recycled it waits for a sandbox
// at most wait (a reset takes a few milliseconds; a run served by a slot
// of another kind costs more) or until ctx ends.
func (pool *readyPool[S]) takeSoon(ctx context.Context, wait time.Duration) (_ S, _ bool) {
	var timeout <-chan time.Time
	for {
		select {
		case p, ok := <-pool.ready:
			if p, got, retry := pool.received(p, ok); !retry {
				return p, got
			}
			continue
		default:
		}
		if pool.recycling.Load() == 0 {
			pool.misses.Add(1)
			return
		}
		if timeout == nil {
			timer := time.NewTimer(wait)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case p, ok := <-pool.ready:
			if p, got, retry := pool.received(p, ok); !retry {
				return p, got
			}
			continue
		case <-timeout:
			pool.misses.Add(1)
			return
		case <-ctx.Done():
			return
		}
	}
}

// willRecycle counts p, just taken, as one that will come back (recycle
// or discard); close waits for it.
func (pool *readyPool[S]) willRecycle() { pool.recycling.Add(1) }

// recycle gives p, reset after its run, back to the ready sandboxes; if
// the pool is closed (or full), p is released instead.
func (pool *readyPool[S]) recycle(p S) {
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
func (pool *readyPool[S]) awaitRecycled() {
	for pool.recycling.Load() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
}

// discard releases p, taken for a run after which it cannot serve
// another because of why (see retireFor), and asks for its replacement;
// the retirement is counted and logged, as an error releasing p is.
func (pool *readyPool[S]) discard(p S, why error) {
	defer pool.recycling.Add(-1)
	pool.report.retired(why)
	_ = pool.replace(p)
}
