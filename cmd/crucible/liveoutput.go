package main

import (
	"bytes"
	"sync"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// liveOutput passes a program's output on while the program runs, to a
// display (stdout on its stdout, stderr on its stderr) or to another sink,
// in the order the runtime delivered it, each chunk written out as soon as
// it arrives.
//
// Security: the runtime must never wait on the host's terminal or pipe (a
// reader that stops reading, a terminal paused with Ctrl-S): a blocked
// OutputFunc would keep the run from ending even past its limits. So
// output only queues a copy of the chunk and returns, and one goroutine
// writes the queue out. The queue holds at most the run's output, which the
// output limit bounds (the runtime delivers nothing past it), as the Result
// does anyway.
type liveOutput struct {
	sink func(stderr bool, data []byte)
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
	return newLiveOutput(func(stderr bool, data []byte) {
		s := d.stdout
		if stderr {
			s = d.stderr
		}
		_, _ = s.Write(data)
	})
}

// newLiveOutput starts passing a program's output to sink, which one
// goroutine calls with each chunk in order; it may block.
func newLiveOutput(sink func(stderr bool, data []byte)) *liveOutput {
	o := &liveOutput{sink: sink, wake: make(chan struct{}, 1), done: make(chan struct{})}
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
			o.sink(c.stderr, c.data)
		}
		if closed {
			return
		}
	}
}
