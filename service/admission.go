package service

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// admission bounds the runs in the server: at most cap(slots) execute at
// once and at most cap(places)-cap(slots) wait for a slot. A run that finds
// no place is refused at once, so the backlog never grows past the queue.
type admission struct {
	slots  chan struct{} // held while a run executes
	places chan struct{} // held from admission to the run's end
	depth  prometheus.Gauge

	mu     sync.Mutex
	closed bool
	freed  chan struct{}  // closed and replaced when a slot frees or admission closes
	wg     sync.WaitGroup // one per admitted run
}

func newAdmission(maxConcurrent, maxQueue int, depth prometheus.Gauge) *admission {
	return &admission{
		slots:  make(chan struct{}, maxConcurrent),
		places: make(chan struct{}, maxConcurrent+maxQueue),
		depth:  depth,
		freed:  make(chan struct{}),
	}
}

// ticket is an admitted run's place in the queue.
type ticket struct {
	a       *admission
	running bool
	release func() // called when the run leaves
}

// enter admits a run into the queue, or refuses it without waiting.
// release is called when the run leaves, or at once if it is refused.
func (a *admission) enter(release func()) (*ticket, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		release()
		return nil, errShuttingDown
	}
	select {
	case a.places <- struct{}{}:
	default:
		release()
		return nil, errQueueFull
	}
	a.wg.Add(1)
	a.depth.Inc()
	return &ticket{a: a, release: release}, nil
}

// wait blocks until the run may execute, or ctx ends.
func (t *ticket) wait(ctx context.Context) error {
	if t.running { // tryRun took a slot
		return nil
	}
	select {
	case t.a.slots <- struct{}{}:
		t.running = true
		t.a.depth.Dec()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tryRun takes a slot for the run if one is free now, and reports
// whether it did (then wait returns at once).
func (t *ticket) tryRun() bool {
	select {
	case t.a.slots <- struct{}{}:
		t.running = true
		t.a.depth.Dec()
		return true
	default:
		return false
	}
}

// waitFree blocks until a slot is free (without taking it), and reports
// whether one is: false once admission closed or ctx ended. A node pulls
// a run from the cluster's queue only then.
func (a *admission) waitFree(ctx context.Context) bool {
	for {
		a.mu.Lock()
		closed, freed, free := a.closed, a.freed, len(a.slots) < cap(a.slots)
		a.mu.Unlock()
		switch {
		case closed:
			return false
		case free:
			return true
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

// wake wakes waitFree's callers.
func (a *admission) wake() {
	a.mu.Lock()
	close(a.freed)
	a.freed = make(chan struct{})
	a.mu.Unlock()
}

// leave gives the run's place, and its slot if it had one, back.
func (t *ticket) leave() {
	if t.running {
		<-t.a.slots
		t.a.wake()
	} else {
		t.a.depth.Dec()
	}
	<-t.a.places
	t.release()
	t.a.wg.Done()
}

// close stops admitting runs; drained is closed once every admitted run
// has left.
func (a *admission) close() (drained <-chan struct{}) {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.wake()
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	return done
}

// runCounter counts each tenant's admitted runs.
type runCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

// acquire counts one more run of tenant unless it already has max;
// release uncounts it.
func (c *runCounter) acquire(tenant string, max int) (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs[tenant] >= max {
		return nil, errorf(KindBusy, "tenant %q already has %d runs queued or running, its share; retry later", tenant, max)
	}
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[tenant]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.runs[tenant]--; c.runs[tenant] == 0 {
			delete(c.runs, tenant)
		}
	}, nil
}
