package service

import (
	"context"
	"sync"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// EventKind names an Event.
type EventKind string

// The events of a followed run, in order: EventRun, any number of
// EventStdout and EventStderr, then EventResult.
const (
	// EventRun carries the run's ID and its status when it was admitted.
	EventRun EventKind = "run"
	// EventStdout carries a redacted chunk of standard output.
	EventStdout EventKind = EventKind(sandbox.StreamStdout)
	// EventStderr carries a redacted chunk of standard error.
	EventStderr EventKind = EventKind(sandbox.StreamStderr)
	// EventResult carries the run's final, redacted answer.
	EventResult EventKind = "result"
)

// Event is one step of a run as a follower sees it. The output events of
// a run add up, per stream, to its result's stdout and stderr (but for
// the rare cases policy.StreamRedactor documents).
type Event struct {
	// Kind says which of the other fields is set.
	Kind EventKind
	// Run is set for EventRun.
	Run *api.RunAccepted
	// Output is set for EventStdout and EventStderr.
	Output sandbox.Data
	// Result is set for EventResult.
	Result *api.RunResponse
}

// A feed holds the events of one run in progress, so that any number of
// followers can follow it, each from its first event, while it runs. The
// runtime's output goes into the feed, never straight to a follower: a
// slow or stalled follower never slows a run down.
//
// A feed's history is bounded: its output events are the run's redacted
// output, which the run's output limit bounds.
type feed struct {
	tenant string // owns the run

	mu     sync.Mutex
	events []Event
	done   bool
	wake   chan struct{} // closed and replaced at every change
}

func newFeed(tenant string) *feed { return &feed{tenant: tenant, wake: make(chan struct{})} }

// publish appends e.
func (f *feed) publish(e Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
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

// follow passes the feed's events to emit, from the first, until the feed
// ends, ctx ends, or emit returns false.
func (f *feed) follow(ctx context.Context, emit func(Event) bool) {
	next := 0
	for {
		f.mu.Lock()
		batch, done, wake := f.events[next:], f.done, f.wake
		f.mu.Unlock()
		for _, e := range batch {
			if !emit(e) {
				return
			}
		}
		next += len(batch)
		if done {
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
