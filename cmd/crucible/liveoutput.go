package main

import (
	"bytes"
	"sync"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// liveOutput shows a program's output on a display while the program runs:
// stdout on the display's stdout, stderr on its stderr, in the order the
// runtime delivered it, each chunk written out as soon as it arrives.
//
// Security: the runtime must never wait on the host's terminal or pipe (a
// reader that stops reading, a terminal paused with Ctrl-S): a blocked
// OutputFunc would keep the run from ending even past its limits. So
// output only queues a copy of the chunk and returns, and one goroutine
// writes the queue out. The queue holds at most the run's output, which the
// output limit bounds (the runtime delivers nothing past it), as the Result
// does anyway.
type liveOutput struct {
	d    *display
	wake chan struct{} // holds a token when the queue or closed changed
	done chan struct{} // closed when everything queued is written

	mu      sync.Mutex
	pending []liveChunk
	closed  bool
}

// liveChunk is one chunk of output, waiting to be written.
type liveChunk struct {
	stderr bool
	data   []byte
}

// live starts showing a program's output on d: pass its output method as
// the OutputFunc of a Request or a Cell, and call its close method once the
// run (or the cell) has returned, before d prints anything else.
func (d *display) live() *liveOutput {
	o := &liveOutput{d: d, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.write()
	return o
}

// output is a sandbox.OutputFunc: it queues a copy of chunk and returns at
// once.
func (o *liveOutput) output(stream sandbox.Stream, chunk []byte) {
	o.mu.Lock()
	o.pending = append(o.pending, liveChunk{stderr: stream == sandbox.StreamStderr, data: bytes.Clone(chunk)})
	o.mu.Unlock()
	o.signal()
}

// close waits until everything queued is written. The OutputFunc must not
// be called after it.
func (o *liveOutput) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.signal()
	<-o.done
}

// signal wakes the writer; a token already there will wake it as well.
func (o *liveOutput) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// write writes the queue out until close.
func (o *liveOutput) write() {
	defer close(o.done)
	for range o.wake {
		o.mu.Lock()
		batch, closed := o.pending, o.closed
		o.pending = nil
		o.mu.Unlock()
		for _, c := range batch {
			s := o.d.stdout
			if c.stderr {
				s = o.d.stderr
			}
			_, _ = s.Write(c.data)
		}
		if closed {
			return
		}
	}
}
