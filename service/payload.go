package service

import (
	"context"
	"runtime/debug"
	"sync"
	"time"
)

// payloadCost is what a body of n bytes is counted as while it is held:
// decoding holds the raw bytes and what they decode to.
func payloadCost(n int64) int64 { return DefaultPayloadFactor * n }

// payloadBudget bounds the memory that request bodies hold at once. A body
// reserves its cost before a byte of it is read, and gives it back when
// its run has ended: a burst of large bodies is served a few at a time
// instead of being held whole all at once (16 bodies of 60 MB held 2.1 GiB
// before this existed), and the rest wait, unread, in their connections.
//
// After a burst, once nothing is reserved, the memory the bodies used is
// given back to the system (debug.FreeOSMemory): without it the Go
// runtime keeps the freed heap for minutes, and a server that served one
// burst looks, to the host, as large as at its peak.
type payloadBudget struct {
	max  int64
	wait time.Duration

	mu      sync.Mutex
	used    int64
	peak    int64         // largest use since the last release to the system
	changed chan struct{} // closed and replaced when used goes down
	freeing bool          // a release to the system is scheduled
}

// burstBytes is the peak reservation after which the freed memory is given
// back to the system.
const burstBytes = 32 << 20

// freeDelay is how long after a burst's end its memory is given back, so
// that back-to-back large requests do not each pay for a full GC.
const freeDelay = time.Second

func newPayloadBudget(max int64, wait time.Duration) *payloadBudget {
	return &payloadBudget{max: max, wait: wait, changed: make(chan struct{})}
}

// Payload is a body's reservation in the payload budget. Release gives it
// back; it is safe to call more than once, and on a nil *Payload.
type Payload struct {
	b    *payloadBudget
	cost int64
	once sync.Once
}

// reserve waits until n bytes of body fit in the budget, for at most the
// budget's wait, or until ctx ends.
func (b *payloadBudget) reserve(ctx context.Context, n int64) (*Payload, error) {
	cost := payloadCost(n) // at most b.max: New checks it for MaxBodyBytes
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if b.used+cost <= b.max {
			b.used += cost
			b.peak = max(b.peak, b.used)
			b.mu.Unlock()
			return &Payload{b: b, cost: cost}, nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return nil, errorf(KindBusy, "the server holds as many request bodies as it can; retry later")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Release gives the reservation back.
func (p *Payload) Release() {
	if p == nil {
		return
	}
	p.once.Do(func() { p.b.release(p.cost) })
}

func (b *payloadBudget) release(cost int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= cost
	close(b.changed)
	b.changed = make(chan struct{})
	if b.used == 0 && b.peak >= burstBytes && !b.freeing {
		b.freeing = true
		time.AfterFunc(freeDelay, b.free)
	}
}

// free gives the heap the last burst left behind back to the system,
// unless another burst began meanwhile.
func (b *payloadBudget) free() {
	b.mu.Lock()
	b.freeing = false
	idle := b.used == 0
	if idle {
		b.peak = 0
	}
	b.mu.Unlock()
	if idle {
		debug.FreeOSMemory()
	}
}
