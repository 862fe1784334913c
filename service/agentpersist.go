package service

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/store"
)

// An agent run is written through to the store as it goes, so that it
// outlives the process (see store.AgentRunStore): at its start, at each
// approval it asks for (before anyone can see it), every
// agentPersistDelay while events come (in one transaction a batch), and
// at its end, before anyone can see it ended. What it writes is bounded,
// whatever the program or the model does:
//
//   - output: the first keepOutput bytes of it (none for an agent run,
//     maxQuestionReplayOutput for an analysis's question), as the
//     run's feed keeps once it ended;
//   - other events: the first maxStoredAgentEvents of them, up to
//     maxStoredAgentEventBytes of data together; the result always;
//   - the trace: up to maxStoredTrace bytes, beyond which its steps are
//     left out (boundedTrace).
const (
	agentPersistDelay        = 250 * time.Millisecond
	maxStoredAgentEvents     = 4096
	maxStoredAgentEventBytes = 4 << 20
	maxStoredTrace           = 8 << 20
	// agentStoreTimeout bounds one write of an agent run.
	agentStoreTimeout = 10 * time.Second
)

// agentPersister writes one agent run through to the store.
type agentPersister struct {
	run  *agentRun
	st   store.Store
	stop chan struct{} // closed: the loop returns
	done chan struct{} // closed once the loop has returned

	mu      sync.Mutex    // one write at a time, in order
	flushed int64         // the position of the last event written (or left out)
	budget  eventBudget   // what may still be written
	saved   int           // the run's changes written so far (agentRun.changes)
	wake    chan struct{} // the feed's, read before the last write
}

// storedTime is the time now as the store keeps it: in UTC, to the
// microsecond, so that a run reads the same from memory and from the
// store.
func storedTime() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// eventBudget is what an agent run may still write of its events.
type eventBudget struct {
	output int // bytes of output
	events int // other events
	bytes  int // their data
}

// newPersister returns the persister of run, or nil when the service
// has no store.
func (s *Service) newPersister(run *agentRun) *agentPersister {
	if s.cfg.Store == nil {
		return nil
	}
	return &agentPersister{run: run, st: s.cfg.Store, stop: make(chan struct{}), done: make(chan struct{}), saved: -1,
		budget: eventBudget{output: run.keepOutput, events: maxStoredAgentEvents, bytes: maxStoredAgentEventBytes}}
}

// start writes the run as it started, with its first events, then
// writes what comes in batches until settle.
func (p *agentPersister) start() {
	if p == nil {
		return
	}
	p.flush(nil, nil)
	go p.loop()
}

// loop writes the run's new events and changes, agentPersistDelay
// after the first of a batch, until stop is closed.
func (p *agentPersister) loop() {
	defer close(p.done)
	for {
		p.mu.Lock()
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-p.stop:
			return
		}
		select {
		case <-time.After(agentPersistDelay):
		case <-p.stop:
			return
		}
		p.flush(nil, nil)
	}
}

// settle stops the loop and writes the run as it ended (end, with its
// trace), with its events so far: before anyone can see it ended.
func (p *agentPersister) settle(end api.AgentRun) {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.flush(&end, nil)
}

// last writes the run's last events, result the last of all (ahead).
func (p *agentPersister) last(result api.AgentRun) {
	result.Trace = nil // the record holds it: the replay puts it back
	p.ahead(Event{Kind: EventResult, Agent: &api.AgentEvent{Run: &result}})
}

// ahead writes e, with the run's record and the events before it,
// before the run's goroutine publishes it, right after, none publishing
// meanwhile (so its ID is the feed's next position): a client that saw
// it finds it in the store after a crash. The result and approvals go
// this way.
func (p *agentPersister) ahead(e Event) {
	if p == nil {
		return
	}
	last, _ := p.run.feed.position()
	e.ID = last + 1
	p.flush(nil, &e)
}

// flush writes the events after the last written, within the budget,
// and the run's record if it changed (or end, as it ended), then next
// if set, outside the budget. A failed write is logged and retried with
// the next.
func (p *agentPersister) flush(end *api.AgentRun, next *Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	run := p.run
	f := run.feed
	f.mu.Lock()
	pending, last, wake := since(f.events, p.flushed), f.last, f.wake
	f.mu.Unlock()
	p.wake = wake
	budget := p.budget
	rows := make([]store.AgentRunEvent, 0, len(pending)+1)
	for _, e := range pending {
		if row, ok := budget.take(e); ok {
			rows = append(rows, row)
		}
	}
	if next != nil {
		if row, err := eventRow(*next); err == nil {
			rows = append(rows, row)
			last = next.ID
		} else {
			run.s.log.Error("encode agent run event", "agent_run", run.id, "kind", next.Kind, "err", err)
		}
	}
	rec, changes := run.record(end)
	if changes == p.saved && end == nil {
		rec = nil
	}
	if rec == nil && len(rows) == 0 {
		p.flushed = last
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), agentStoreTimeout)
	defer cancel()
	if err := p.st.SaveAgentRun(ctx, run.tenant, run.id, rec, rows); err != nil {
		run.s.log.Error("write agent run to the store", "agent_run", run.id, "err", err)
		return
	}
	p.flushed, p.budget, p.saved = last, budget, changes
}

// take returns e as a row to write, and takes it from b, unless b has no
// room for it (the result always has): output beyond b's bytes is cut,
// keeping its start (its ID the position of the end of what is kept),
// as feed.dropOutput cuts it.
func (b *eventBudget) take(e Event) (store.AgentRunEvent, bool) {
	if e.Output != nil {
		if b.output <= 0 {
			return store.AgentRunEvent{}, false
		}
		if len(e.Output) > b.output {
			start := e.ID - int64(len(e.Output))
			e.Output = e.Output[:b.output:b.output]
			e.ID = start + int64(b.output)
		}
		b.output -= len(e.Output)
	}
	row, err := eventRow(e)
	if err != nil {
		return store.AgentRunEvent{}, false
	}
	if e.Output == nil && e.Kind != EventResult {
		if b.events <= 0 || len(row.Data) > b.bytes {
			return store.AgentRunEvent{}, false
		}
		b.events--
		b.bytes -= len(row.Data)
	}
	return row, true
}

// eventRow encodes e as the store keeps it: its output, or its
// AgentEvent, as JSON.
func eventRow(e Event) (store.AgentRunEvent, error) {
	var v any = e.Agent
	if e.Output != nil {
		v = e.Output
	}
	b, err := json.Marshal(v)
	return store.AgentRunEvent{ID: e.ID, Kind: string(e.Kind), Data: b}, err
}

// eventOf decodes a row eventRow encoded.
func eventOf(row store.AgentRunEvent) (Event, error) {
	e := Event{ID: row.ID, Kind: EventKind(row.Kind)}
	if e.Kind == EventStdout || e.Kind == EventStderr {
		return e, json.Unmarshal(row.Data, &e.Output)
	}
	e.Agent = new(api.AgentEvent)
	return e, json.Unmarshal(row.Data, e.Agent)
}

// record is the run as the store keeps it, with end instead of its info
// when set, and the count of its changes it reflects.
func (run *agentRun) record(end *api.AgentRun) (*store.AgentRunRecord, int) {
	run.mu.Lock()
	defer run.mu.Unlock()
	rec := &store.AgentRunRecord{Run: run.info, Approvals: slices.Clone(run.approvals), Node: run.s.nodeID()}
	if end != nil {
		rec.Run = *end
		rec.Run.Trace = boundedTrace(end.Trace)
	}
	if p := rec.Run.PendingApproval; p != nil {
		a := *p
		rec.Run.PendingApproval = &a
	}
	for _, a := range run.approvals {
		if d, ok := run.decided[a.ID]; ok {
			rec.Decisions = append(rec.Decisions, d)
		}
	}
	return rec, run.changes
}

// boundedTrace returns trace, or when it is over maxStoredTrace bytes the
// trace without its steps and evidence output (the records of the
// executions hold each one's output), saying so.
func boundedTrace(trace json.RawMessage) json.RawMessage {
	if len(trace) <= maxStoredTrace {
		return trace
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trace, &m); err != nil {
		return nil
	}
	delete(m, "steps")
	delete(m, "output")
	note, _ := json.Marshal("the trace was over the store's bound of 8 MiB: its steps and output are left out; the records of the run's executions (GET /v1/runs?agent_run=) hold each program's output")
	m["omitted"] = note
	b, err := json.Marshal(m)
	if err != nil || len(b) > maxStoredTrace {
		return nil
	}
	return b
}
