package linux

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// pooled is what a pool keeps: a sandbox (a *sandboxProc, or a fake in the
// pool's tests) that can say whether it still lives and be destroyed.
type pooled interface {
	alive() bool
	release() error
}

// sandboxPool keeps sandboxes of one kind built ahead of time, so that a
// request does not wait for namespaces, a cgroup, init's start and the
// root's mounts. Pooling changes when a sandbox is built, never what a run
// can see. There are three kinds, one per job:
//
//   - oneShotPool (Options.Prestart, Options.SingleRunWarm): a sandbox is
//     pristine (no request has touched it) and serves one run, after which
//     it is destroyed and its replacement built.
//   - recyclePool (zygote slots, Options.Warm): a slot comes back after
//     init's reset and serves up to a thousand runs, and is retired sooner
//     on an anomaly (zygote.go says what is reset and checked).
//   - detachPool (Options.WarmSessions): a warm session, once taken, is its
//     session's until it closes; its replacement is built at once.
//
// A replacement is built when a run ends, not when it begins: building a
// sandbox costs CPU and kernel locks that would otherwise slow the run that
// just took one. Between runs (while an agent thinks) the machine is idle.
type sandboxPool[S pooled] interface {
	// take returns a ready sandbox, or false when none is ready (a miss).
	take(ctx context.Context) (S, bool)
	// put ends the request that took s. why nil: s may serve another
	// (only a recyclePool keeps it; the others destroy it, at the end of
	// its service); else s is retired because of why (see retireFor),
	// which is counted and logged, and destroyed. An error destroying s
	// is counted and logged.
	put(s S, why error) error
	// cleanupFailed counts and logs err, if not nil: an error cleaning up
	// after a sandbox of the pool outside it (a zygote slot's run cgroup).
	cleanupFailed(err error)
	// stats reports the pool.
	stats() PoolStats
	// close destroys the ready sandboxes and stops building more.
	close()
}

// readyPool is what the three kinds share: the sandboxes ready, the
// goroutine that builds them (refill), the counts and the shutdown.
type readyPool[S pooled] struct {
	build func() (S, error)
	// gate, if set, returns a channel closed when a build may start.
	gate      func() <-chan struct{}
	size      int
	ready     chan S
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
	closeMu   sync.Mutex
	closed    bool
	// report counts and logs what goes wrong in the background.
	report *poolReport
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
	// Retired counts the sandboxes destroyed before the end of their
	// service as the pool means it: zygote slots (Options.Warm) taken for
	// a run and then destroyed rather than given back, after an anomaly
	// or at the end of their service; single-run warm sandboxes taken and
	// not used; ready sandboxes found dead.
	Retired uint64 `json:"retired,omitempty"`
	// RetiredBy counts Retired by reason: process_left (the run left
	// processes), oom, zygote_changed (a run changed the zygote's
	// scheduling), reset_failed, fork_failed (the next run's fork),
	// max_runs and max_age (the end of a slot's service), limits (a run's
	// limits could not be applied to a ready single-run warm sandbox),
	// dead (a ready sandbox had died), error (a platform error during the
	// run).
	RetiredBy map[string]uint64 `json:"retired_by,omitempty"`
	// BuildFailures counts the pool's builds that failed; each is
	// retried after a backoff.
	BuildFailures uint64 `json:"build_failures,omitempty"`
	// RecycleErrors counts errors destroying a sandbox after use or
	// giving it back (a run's cgroup not removed, a sandbox not released).
	RecycleErrors uint64 `json:"recycle_errors,omitempty"`
}

// refillDelay is how long a replacement waits before it is built.
const refillDelay = 10 * time.Millisecond

// Failed builds are retried after a backoff that starts at
// minBuildBackoff and doubles up to maxBuildBackoff.
const (
	minBuildBackoff = 10 * time.Millisecond
	maxBuildBackoff = 5 * time.Second
)

// newPool begins keeping size sandboxes made by build ready. Each build
// waits until gate, if not nil, allows it. The pool's failures are logged
// to log (nil: slog.Default()) as the pool called name's.
func newPool[S pooled](name string, size int, build func() (S, error), gate func() <-chan struct{}, log *slog.Logger) *readyPool[S] {
	p := &readyPool[S]{
		build:  build,
		gate:   gate,
		size:   size,
		ready:  make(chan S, size),
		want:   make(chan struct{}, size),
		done:   make(chan struct{}),
		report: newPoolReport(name, log),
	}
	for range size {
		p.want <- struct{}{}
	}
	p.wg.Go(p.refill)
	return p
}

// refill builds a sandbox for each token in want until the pool is closed.
// Failures back off, so a broken host does not spin, and are counted and
// logged (rate-limited: a build that fails for good logs a line per
// rateLogEvery).
func (pool *readyPool[S]) refill() {
	backoff := minBuildBackoff
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
		for failures := 1; err != nil; failures++ {
			pool.report.buildFailed(err, failures, backoff)
			select {
			case <-time.After(backoff):
				backoff = min(2*backoff, maxBuildBackoff)
				p, err = pool.build()
			case <-pool.done:
				return
			}
		}
		backoff = minBuildBackoff
		select {
		case pool.ready <- p:
		case <-pool.done:
			pool.report.recycleFailed(p.release())
			return
		}
	}
}

// takeReady returns a ready, live sandbox, or false if none is ready.
func (pool *readyPool[S]) takeReady() (S, bool) {
	for {
		select {
		case p, ok := <-pool.ready:
			if p, got, retry := pool.received(p, ok); !retry {
				return p, got
			}
		default:
			pool.misses.Add(1)
			var none S
			return none, false
		}
	}
}

// received handles a sandbox received from the ready channel (ok false:
// the pool is closed): a live one is a hit, returned with got set; a dead
// one is replaced and retry is set; a closed pool gives nothing.
func (pool *readyPool[S]) received(p S, ok bool) (_ S, got, retry bool) {
	if !ok {
		return p, false, false
	}
	if !p.alive() {
		pool.report.retired(retireFor(retiredDead, errors.New("a ready sandbox had died")))
		_ = pool.replace(p)
		return p, false, true
	}
	pool.hits.Add(1)
	return p, true, false
}

// detach asks for the replacement of a sandbox just taken now: for a
// sandbox that outlives its request by far, such as a session's.
func (pool *readyPool[S]) detach() {
	select {
	case pool.want <- struct{}{}:
	default:
	}
}

// replace destroys a pooled sandbox and asks for another. An error
// destroying it is counted and logged, and returned.
func (pool *readyPool[S]) replace(p S) error {
	err := p.release()
	pool.report.recycleFailed(err)
	select {
	case pool.want <- struct{}{}:
	default:
	}
	return err
}

// cleanupFailed counts and logs err, if not nil (see sandboxPool).
func (pool *readyPool[S]) cleanupFailed(err error) { pool.report.recycleFailed(err) }

// stats reports the pool.
func (pool *readyPool[S]) stats() PoolStats {
	st := PoolStats{Size: pool.size, Ready: len(pool.ready), Hits: pool.hits.Load(), Misses: pool.misses.Load()}
	pool.report.fill(&st)
	return st
}

// close destroys the ready sandboxes and stops building more, once no
// sandbox taken is still to come back.
func (pool *readyPool[S]) close() {
	pool.closeOnce.Do(func() {
		close(pool.done)
		pool.wg.Wait()
		pool.awaitRecycled()
		pool.closeMu.Lock()
		pool.closed = true
		close(pool.ready)
		pool.closeMu.Unlock()
		for p := range pool.ready {
			pool.report.recycleFailed(p.release())
		}
	})
}

// acquire returns a built sandbox with limits lim: a pre-started one when
// there is one, else one built now.
func (r *Runtime) acquire(ctx context.Context, lim cgroupLimits) (*sandboxProc, error) {
	if p := takeFrom(ctx, r.pool); p != nil {
		if err := p.cg.setLimits(lim); err != nil {
			_ = r.retire(p)
			return nil, err
		}
		return p, nil
	}
	return r.launch(lim)
}

// takeFrom takes a ready sandbox from pool, if there is a pool and it has
// one, and marks it as the pool's, for retire.
func takeFrom(ctx context.Context, pool sandboxPool[*sandboxProc]) *sandboxProc {
	if pool == nil {
		return nil
	}
	p, ok := pool.take(ctx)
	if !ok {
		return nil
	}
	p.pool = pool
	return p
}

// retire ends a sandbox's request: it is destroyed and, if it came from a
// pool, the pool asks for a replacement (see sandboxPool).
func (r *Runtime) retire(p *sandboxProc) error {
	if p.pool != nil {
		return p.pool.put(p, nil)
	}
	return p.release()
}

// statsOf reports pool; all zero without one.
func statsOf(pool sandboxPool[*sandboxProc]) PoolStats {
	if pool == nil {
		return PoolStats{}
	}
	return pool.stats()
}

// PoolStats reports the pool of pre-started sandboxes; all zero without one.
func (r *Runtime) PoolStats() PoolStats { return statsOf(r.pool) }

// WarmStats reports the pool of warm Python sandboxes (zygote slots, or
// Options.SingleRunWarm's); all zero without one.
func (r *Runtime) WarmStats() PoolStats {
	if r.zygotes != nil {
		return r.zygotes.stats()
	}
	return statsOf(r.warm)
}

// WarmSessionStats reports the pool of warm sessions (Options.WarmSessions):
// Hits counts sessions that took one, Misses sessions that fitted one but
// found none ready; all zero without the pool.
func (r *Runtime) WarmSessionStats() PoolStats { return statsOf(r.warmSessions) }

// Close closes every session, destroys the sandboxes kept ready and stops
// building more. Runs in progress are not affected (Close waits for those
// in zygote slots to end, and destroys their slots); Run may still be
// called and builds sandboxes on demand.
func (r *Runtime) Close() error {
	for _, s := range r.sessions.all() {
		_ = s.Close()
	}
	for _, pool := range []sandboxPool[*sandboxProc]{r.pool, r.zygotes, r.warm, r.warmSessions} {
		if pool != nil {
			pool.close()
		}
	}
	return nil
}
