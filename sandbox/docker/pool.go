package docker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// pool keeps Options.Prestart containers created and started, each
// waiting for one run: a pooled run skips the container's create and
// start, most of `docker run`'s time. A container serves exactly one run
// and is removed after it, never reused: nothing a program leaves (files,
// processes, the tmpfs's contents) can reach a later run. Each one taken
// is replaced in the background.
//
// The containers are made with the default limits (sandbox.DefaultLimits):
// what of a container's limits is fixed when it is created (the tmpfs
// sizes, the rlimits, the memory and pids limits; see fixedLimits) must be
// the request's, else the run takes the cold path and makes its own.
type pool struct {
	rt    *Runtime
	lim   sandbox.Limits
	key   fixedLimits
	ready chan *box
	log   *slog.Logger

	ctx    context.Context // cancelled by close: builds in flight stop
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	// work counts the builds and the removals in flight; close waits for
	// them. busy is their number, for Settle.
	work sync.WaitGroup
	busy atomic.Int64
}

// retryDelay is how long a failed build waits before the next try, so a
// daemon that refuses (out of memory, restarting) is not asked in a loop.
const retryDelay = time.Second

// newPool begins keeping size containers of rt ready.
func newPool(rt *Runtime, size int, log *slog.Logger) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	lim := sandbox.DefaultLimits().WithDefaults()
	p := &pool{rt: rt, lim: lim, key: fixedLimitsOf(lim), ready: make(chan *box, size), log: log, ctx: ctx, cancel: cancel}
	for range size {
		p.refill()
	}
	return p
}

// take returns a ready container for a run of limits lim, or false at once
// if none is ready or lim differs from the pool's in what is fixed at
// create time.
func (p *pool) take(lim sandbox.Limits) (*box, bool) {
	if fixedLimitsOf(lim) != p.key {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false
	}
	select {
	case c := <-p.ready:
		p.refillLocked()
		return c, true
	default:
		return nil, false
	}
}

// refill builds one container in the background and makes it ready,
// retrying until it succeeds or the pool is closed.
func (p *pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refillLocked()
}

func (p *pool) refillLocked() {
	if p.closed {
		return
	}
	p.busy.Add(1)
	p.work.Go(func() {
		defer p.busy.Add(-1)
		for {
			c, err := p.build()
			if err == nil {
				// Never blocks: at most size containers are being built or
				// ready at once.
				p.ready <- c
				return
			}
			if p.ctx.Err() != nil {
				return
			}
			p.log.Warn("docker pool: build a container", "runtime", p.rt.name(), "err", err)
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(retryDelay):
			}
		}
	})
}

// build makes a container ready: started, its waiting process attached
// and the program's launcher waiting, as the uid the run will have.
func (p *pool) build() (*box, error) {
	uid, err := p.rt.uids.Take()
	if err != nil {
		return nil, err
	}
	b := &box{uid: uid}
	if b.id, b.cg, err = p.rt.startContainer(p.ctx, p.lim, true); err != nil {
		p.rt.uids.Give(uid)
		return nil, err
	}
	if b.agent, err = p.rt.attachAgent(p.ctx, b.id); err == nil {
		b.launch, err = p.rt.startLauncher(p.ctx, b.id, uid)
	}
	if err != nil {
		b.close()
		_ = p.rt.removeContainer(b.id)
		p.rt.uids.Give(uid)
		return nil, err
	}
	return b, nil
}

// retire removes a container whose run has ended, with its volumes, off
// the run's critical path, then frees its uid; after close, at once.
func (p *pool) retire(b *box) {
	b.close()
	p.mu.Lock()
	defer p.mu.Unlock()
	remove := func() {
		if err := p.rt.removeContainer(b.id); err != nil {
			p.log.Warn("docker pool: remove a used container", "runtime", p.rt.name(), "id", b.id, "err", err)
		}
		p.rt.uids.Give(b.uid)
	}
	if p.closed {
		remove()
		return
	}
	p.busy.Add(1)
	p.work.Go(func() {
		defer p.busy.Add(-1)
		remove()
	})
}

// settle waits until every container is ready and nothing is being built
// or removed, or until ctx is done.
func (p *pool) settle(ctx context.Context) error {
	for len(p.ready) < cap(p.ready) || p.busy.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// close stops the builds, waits for them and for the removals in flight,
// and removes every ready container. The containers of runs in progress
// are removed when their runs end.
func (p *pool) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.work.Wait()
	var first error
	for {
		select {
		case b := <-p.ready:
			b.close()
			if err := p.rt.removeContainer(b.id); err != nil && first == nil {
				first = err
			}
			p.rt.uids.Give(b.uid)
		default:
			return first
		}
	}
}

// fixedLimits are the limits a container is created with that a request
// must share to run in it: the tmpfs sizes (DiskBytes), the rlimits
// docker-init hands on to every exec (CPU seconds, file size, open files,
// processes), and the cgroup's memory and pids limits. The daemon could
// change the last two in a running container (ContainerUpdate), but not
// under gVisor (runsc has no update command: the daemon's call fails), and
// under runc it took 20 to 100 ms here (`docker update --memory`, whose
// CLI alone takes 20 ms), a large part of a pooled run's 150 ms, for the
// few requests that ask for other limits; those take the cold path.
type fixedLimits struct {
	diskBytes, fileSizeBytes, openFiles, processes, memoryBytes, cpuSeconds int64
}

func fixedLimitsOf(lim sandbox.Limits) fixedLimits {
	return fixedLimits{
		diskBytes: lim.DiskBytes, fileSizeBytes: lim.FileSizeBytes, openFiles: lim.OpenFiles,
		processes: lim.Processes, memoryBytes: lim.MemoryBytes, cpuSeconds: cpuSeconds(lim),
	}
}
