package main

import (
	"sync"

	"github.com/crucible-sandbox/crucible/swe"
)

// sweProgress shows a swe run's progress on a display's stderr as it
// comes: each step's message as a line of the CLI's own, each command's
// output as it is written (inert on a terminal: it is a program's).
//
// Security: as liveOutput, the agent must never wait on the terminal: an
// event only queues a copy and returns, and one goroutine writes the queue
// out. The queue holds at most the run's output, which its budgets bound.
type sweProgress struct {
	d    *display
	wake chan struct{} // holds a token when the queue or closed changed
	done chan struct{} // closed when the writer ended

	mu      sync.Mutex
	pending []swe.Event
	idle    *sync.Cond // signalled when the writer emptied the queue
	busy    bool       // the writer holds events taken off the queue
	closed  bool
	// midLine is whether the last output written did not end a line
	// (the writer's own).
	midLine bool
}

// newSWEProgress starts showing progress on d.
func newSWEProgress(d *display) *sweProgress {
	p := &sweProgress{d: d, wake: make(chan struct{}, 1), done: make(chan struct{})}
	p.idle = sync.NewCond(&p.mu)
	go p.write()
	return p
}

// event is a swe.Config's OnEvent: it queues e and returns at once.
func (p *sweProgress) event(e swe.Event) {
	e.Output = append([]byte(nil), e.Output...)
	p.mu.Lock()
	p.pending = append(p.pending, e)
	p.mu.Unlock()
	p.signal()
}

// flush waits until everything queued so far is written.
func (p *sweProgress) flush() {
	p.mu.Lock()
	for (len(p.pending) > 0 || p.busy) && !p.closed {
		p.idle.Wait()
	}
	p.mu.Unlock()
}

// close writes what is queued and stops the writer; event must not be
// called after it.
func (p *sweProgress) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.signal()
	<-p.done
}

func (p *sweProgress) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// write writes the queue out until close.
func (p *sweProgress) write() {
	defer close(p.done)
	for range p.wake {
		p.mu.Lock()
		batch, closed := p.pending, p.closed
		p.pending, p.busy = nil, true
		p.mu.Unlock()
		for _, e := range batch {
			p.show(e)
		}
		p.mu.Lock()
		p.busy = false
		p.idle.Broadcast()
		p.mu.Unlock()
		if closed {
			p.endLine()
			return
		}
	}
}

// show writes one event.
func (p *sweProgress) show(e swe.Event) {
	if len(e.Output) > 0 {
		_, _ = p.d.stderr.Write(e.Output)
		p.midLine = e.Output[len(e.Output)-1] != '\n'
		return
	}
	if e.Message == "" {
		return
	}
	p.endLine()
	p.d.say("swe: step %d · %s: %s", e.Step, e.Kind, e.Message)
}

// endLine ends a line of output the program left open, off a terminal
// (on one, the display does it).
func (p *sweProgress) endLine() {
	if p.midLine && !p.d.stderr.tty {
		_, _ = p.d.stderr.Write([]byte("\n"))
	}
	p.midLine = false
}
