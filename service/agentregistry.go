package service

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"
)

// agentRegistry holds the agent runs of the service in memory: those
// going on, counted per tenant against their share, and the last ended
// ones, with their traces, for a bounded number and time (retain,
// retainFor). Nothing of an agent run is in the store but the records of
// its executions.
type agentRegistry struct {
	max       int
	retain    int
	retainFor time.Duration

	mu      sync.Mutex
	closed  bool
	runs    map[string]*agentRun
	active  map[string]int // tenant → runs going on
	total   int            // runs going on
	ended   []*agentRun    // oldest first
	started uint64         // runs started so far, for their order
	wg      sync.WaitGroup // one per run going on
}

func newAgentRegistry(c AgentConfig) *agentRegistry {
	return &agentRegistry{max: c.MaxRuns, retain: c.Retain, retainFor: c.RetainFor,
		runs: map[string]*agentRun{}, active: map[string]int{}}
}

// add admits run, of its tenant, unless the tenant already has tenantMax
// runs going on, the service its maximum, or the service is shutting
// down.
func (g *agentRegistry) add(run *agentRun, tenantMax int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return errShuttingDown
	case g.active[run.tenant] >= tenantMax:
		return errorf(KindBusy, "tenant %q already has %d agent runs going on, its share; wait for one to end or retry later", run.tenant, tenantMax)
	case g.total >= g.max:
		return errorf(KindBusy, "too many agent runs are going on; retry later")
	}
	g.started++
	run.seq = g.started
	g.runs[run.id] = run
	g.active[run.tenant]++
	g.total++
	g.wg.Add(1)
	return nil
}

// finished moves run from those going on to the ended ones, and forgets
// the ended runs beyond the retention.
func (g *agentRegistry) finished(run *agentRun) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active[run.tenant]--; g.active[run.tenant] <= 0 {
		delete(g.active, run.tenant)
	}
	g.total--
	g.ended = append(g.ended, run)
	g.expire(time.Now())
	g.wg.Done()
}

// expire forgets the ended runs beyond the retention; g.mu is held.
func (g *agentRegistry) expire(now time.Time) {
	n := 0
	for n < len(g.ended) && (len(g.ended)-n > g.retain || now.Sub(g.ended[n].endedAt()) > g.retainFor) {
		delete(g.runs, g.ended[n].id)
		n++
	}
	g.ended = slices.Delete(g.ended, 0, n)
}

// get returns tenant's run id. Another tenant's is KindNotFound like a
// missing one, so that IDs reveal nothing across tenants.
func (g *agentRegistry) get(tenant, id string) (*agentRun, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire(time.Now())
	if run, ok := g.runs[id]; ok && run.tenant == tenant {
		return run, nil
	}
	return nil, &Error{Kind: KindNotFound, Message: fmt.Sprintf("no agent run %q (ended runs are kept for a while only)", id),
		Field: "id", Rule: "must name an agent run of yours the server holds"}
}

// list returns tenant's runs, newest first.
func (g *agentRegistry) list(tenant string) []*agentRun {
	g.mu.Lock()
	g.expire(time.Now())
	var mine []*agentRun
	for _, run := range g.runs {
		if run.tenant == tenant {
			mine = append(mine, run)
		}
	}
	g.mu.Unlock()
	slices.SortFunc(mine, func(a, b *agentRun) int { return cmp.Compare(b.seq, a.seq) })
	return mine
}

// close stops admitting runs and cancels those going on, with reason;
// drained is closed once they have all ended.
func (g *agentRegistry) close(reason string) (drained <-chan struct{}) {
	g.mu.Lock()
	g.closed = true
	var going []*agentRun
	for _, run := range g.runs {
		going = append(going, run)
	}
	g.mu.Unlock()
	for _, run := range going {
		run.stop(reason)
	}
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	return done
}
