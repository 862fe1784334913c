package server

import (
	"context"
	"sync"
)

// A feed holds the events of one run in progress, started with ?async=1
// or ?stream=1, so that any number of clients can follow it (GET
// /v1/runs/{id}/events), each from its first event, while it runs. The
// runtime's output goes into the feed, not to a client: a slow or stalled
// client never slows a run down.
//
// A feed's history is bounded: its output events are the run's redacted
// output, which the run's output limit bounds.
type feed struct {
	tenant string // owns the run

	mu     sync.Mutex
	events []feedEvent
	done   bool
	wake   chan struct{} // closed and replaced at every change
}

// feedEvent is one Server-Sent Event, its data already JSON.
type feedEvent struct {
	name string
	data []byte
}

func newFeed(tenant string) *feed { return &feed{tenant: tenant, wake: make(chan struct{})} }

// publish appends an event whose data is v as JSON.
func (f *feed) publish(name string, v any) {
	name, b := eventData(name, v)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, feedEvent{name, b})
	close(f.wake)
	f.wake = make(chan struct{})
}

// end marks the feed complete: followers return after its last event.
func (f *feed) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = true
	close(f.wake)
	f.wake = make(chan struct{})
}

// follow sends the feed's events to es, from the first, until the feed
// ends, ctx ends, or es fails.
func (f *feed) follow(ctx context.Context, es *eventStream) {
	next := 0
	for {
		f.mu.Lock()
		batch, done, wake := f.events[next:], f.done, f.wake
		f.mu.Unlock()
		for _, e := range batch {
			es.sendJSON(e.name, e.data)
		}
		next += len(batch)
		if done || es.broken() {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}

// feeds are the feeds of the runs in progress, by run ID.
type feeds struct {
	mu sync.Mutex
	m  map[string]*feed
}

// open creates the feed of tenant's run id.
func (fs *feeds) open(tenant, id string) *feed {
	f := newFeed(tenant)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m == nil {
		fs.m = map[string]*feed{}
	}
	fs.m[id] = f
	return f
}

// get returns the feed of tenant's run id, if it is in progress; another
// tenant's run has none.
func (fs *feeds) get(tenant, id string) (*feed, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.m[id]
	if !ok || f.tenant != tenant {
		return nil, false
	}
	return f, true
}

// close ends run id's feed and forgets it: later followers read the
// record instead.
func (fs *feeds) close(id string) {
	fs.mu.Lock()
	f := fs.m[id]
	delete(fs.m, id)
	fs.mu.Unlock()
	if f != nil {
		f.end()
	}
}
