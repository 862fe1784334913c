package service

import (
	"context"
	"sort"
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
	// EventResult carries the run's final, redacted answer; for an agent
	// run, the run as it ended (Event.Agent.Run).
	EventResult EventKind = "result"
)

// The events of an agent run, in order: EventAgentRun, then any number of
// EventStep, EventCode, EventStdout, EventStderr, EventExecution,
// EventApproval and EventDecision, then EventResult. Each but the output
// carries its data in Event.Agent.
const (
	// EventAgentRun carries the run as it started (Agent.Run).
	EventAgentRun EventKind = "agent_run"
	// EventStep carries the agent's progress (Agent.Step).
	EventStep EventKind = "step"
	// EventCode carries a program about to run (Agent.Code); its output
	// events follow.
	EventCode EventKind = "code"
	// EventExecution carries how the program ended (Agent.Execution).
	EventExecution EventKind = "execution"
	// EventApproval carries a program waiting for approval
	// (Agent.Approval).
	EventApproval EventKind = "approval"
	// EventDecision carries the decision on it (Agent.Decision).
	EventDecision EventKind = "approval_decision"
)

// Event is one step of a run as a follower sees it. The output events of
// a run add up, per stream, to its result's stdout and stderr (but for
// the rare cases policy.StreamRedactor documents).
type Event struct {
	// ID is the event's position in its run, which a follower that lost
	// its connection gives back to Events to resume after it: 1 for
	// EventRun; for an output event, 1 plus the run's output bytes (both
	// streams) up to its end; for EventResult, 2 plus all of them. IDs
	// increase within a run, and a run's record gives the same positions
	// (see Events).
	ID int64
	// Kind says which of the other fields is set.
	Kind EventKind
	// Run is set for EventRun.
	Run *api.RunAccepted
	// Output is set for EventStdout and EventStderr; never empty.
	Output sandbox.Data
	// Result is set for EventResult of a run.
	Result *api.RunResponse
	// Agent is set for the events of an agent run but output.
	Agent *api.AgentEvent
}

// maxEventOutput bounds the output one held event gathers: consecutive
// chunks of one stream are held as one event up to this size.
const maxEventOutput = 64 << 10

// since returns the events of events, in ID order, that come after
// position after; an output event that after falls inside is cut to the
// part after it. The result shares no Event with events.
func since(events []Event, after int64) []Event {
	i := sort.Search(len(events), func(i int) bool { return events[i].ID > after })
	out := append([]Event(nil), events[i:]...)
	if len(out) > 0 && out[0].Output != nil {
		if start := out[0].ID - int64(len(out[0].Output)); after > start {
			out[0].Output = out[0].Output[after-start:]
		}
	}
	return out
}

// A feed holds the events of one run in progress, so that any number of
// followers can follow it, each from its first event or from any position
// (Event.ID), while it runs. The runtime's output goes into the feed,
// never straight to a follower: a slow or stalled follower never slows a
// run down.
//
// A feed's history is bounded by the run's output limit: it holds the
// run's redacted output once, in events of up to 64 KiB of one stream,
// with one more event at each switch between stdout and stderr. (A
// program that alternates the two byte by byte costs an event, some 80
// bytes, per byte.)
type feed struct {
	tenant string // owns the run

	mu     sync.Mutex
	events []Event
	last   int64 // the ID of the last event, 0 before the first
	done   bool
	wake   chan struct{} // closed and replaced at every change
}

func newFeed(tenant string) *feed { return &feed{tenant: tenant, wake: make(chan struct{})} }

// publish appends e, giving it its ID; output of the stream of the last
// event is added to it, up to maxEventOutput.
func (f *feed) publish(e Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch e.Kind {
	case EventStdout, EventStderr:
		if len(e.Output) == 0 {
			return
		}
		f.last += int64(len(e.Output))
		if n := len(f.events); n > 0 {
			if prev := &f.events[n-1]; prev.Kind == e.Kind && len(prev.Output)+len(e.Output) <= maxEventOutput {
				// Followers hold copies of prev, whose bytes this append
				// never changes.
				prev.Output, prev.ID = append(prev.Output, e.Output...), f.last
				f.changed()
				return
			}
		}
	default: // EventRun comes first, at 1; EventResult last
		f.last++
	}
	e.ID = f.last
	f.events = append(f.events, e)
	f.changed()
}

// changed wakes the followers; f.mu is held.
func (f *feed) changed() {
	close(f.wake)
	f.wake = make(chan struct{})
}

// end marks the feed complete: followers return after its last event.
func (f *feed) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = true
	f.changed()
}

// dropOutput forgets the output the feed holds beyond its first keep
// bytes (both streams, in order), keeping the other events and their IDs:
// an agent run's history, once it ended, is its steps and as much of its
// output as it may keep (its trace holds all of it). An output event cut
// keeps its start, its ID the position of the end of what it kept.
func (f *feed) dropOutput(keep int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kept := f.events[:0] // followers hold copies (since): compacting in place is safe
	for _, e := range f.events {
		if e.Output != nil {
			if keep <= 0 {
				continue
			}
			if len(e.Output) > keep {
				start := e.ID - int64(len(e.Output))
				e.Output = e.Output[:keep:keep]
				e.ID = start + int64(keep)
			}
			keep -= len(e.Output)
		}
		kept = append(kept, e)
	}
	clear(f.events[len(kept):])
	f.events = kept
}

// position returns the ID of the feed's last event so far and whether the
// feed is complete.
func (f *feed) position() (last int64, done bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last, f.done
}

// follow passes the feed's events after position after to yield, until
// the feed ends, ctx ends, or yield returns false.
func (f *feed) follow(ctx context.Context, after int64, yield func(Event) bool) {
	for {
		f.mu.Lock()
		batch, done, wake := since(f.events, after), f.done, f.wake
		f.mu.Unlock()
		for _, e := range batch {
			if !yield(e) {
				return
			}
			after = e.ID
		}
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
