package docker

import (
	"sync"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxEarly bounds what is kept, per stream, of output written while no
// cell runs (the interpreter's warnings as it starts; a cell's leftovers
// before the session is paused): it waits, in host memory, for the next
// cell, as in the native runtime.
const maxEarly = 1 << 20

// cellOutput splits a session's output into cells. The multiplexer in the
// container (sessionmux.py) passes on the kernel's stdout and stderr in
// the order written, and every byte written before a reply ahead of the
// reply, so a cell's output is what arrived between the cell's start and
// its reply, read from one ordered stream: nothing in it is a marker the
// cell could print.
type cellOutput struct {
	mu      sync.Mutex
	running bool
	streams [2]capture // stdout, stderr
	limit   int64
	onOver  func()
	emit    sandbox.OutputFunc
}

// capture is one stream's part of a cell's output.
type capture struct {
	pending   []byte
	truncated bool
	early     []byte
	earlyCut  bool
}

// streamNames are the streams of streams' indexes.
var streamNames = [2]sandbox.Stream{sandbox.StreamStdout, sandbox.StreamStderr}

// add takes bytes of stream i as they arrive.
func (o *cellOutput) add(i int, b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.addLocked(i, b)
}

func (o *cellOutput) addLocked(i int, b []byte) {
	c := &o.streams[i]
	if !o.running {
		if room := maxEarly - len(c.early); len(b) > room {
			b, c.earlyCut = b[:max(room, 0)], true
		}
		c.early = append(c.early, b...)
		return
	}
	if c.truncated || len(b) == 0 {
		return
	}
	if room := o.limit - int64(len(c.pending)); int64(len(b)) > room {
		b, c.truncated = b[:room], true
	}
	c.pending = append(c.pending, b...)
	if o.emit != nil && len(b) > 0 {
		o.emit(streamNames[i], b)
	}
	if c.truncated && o.onOver != nil {
		o.onOver()
	}
}

// begin starts a cell with its per-stream cap, what to call when a stream
// reaches it, and its OutputFunc (nil for none). What arrived while no
// cell ran starts the cell's output.
func (o *cellOutput) begin(limit int64, onOver func(), emit sandbox.OutputFunc) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running, o.limit, o.onOver, o.emit = true, limit, onOver, emit
	for i := range o.streams {
		c := &o.streams[i]
		early, cut := c.early, c.earlyCut
		c.early, c.earlyCut, c.pending, c.truncated = nil, false, nil, false
		o.addLocked(i, early)
		if cut {
			// What was dropped came before the cell's own output.
			c.truncated = true
		}
	}
}

// end ends the cell and returns its output: what arrived until now.
func (o *cellOutput) end(res *sandbox.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running, o.onOver, o.emit = false, nil, nil
	res.Stdout, res.StdoutTruncated = sandbox.Data(o.streams[0].pending), o.streams[0].truncated
	res.Stderr, res.StderrTruncated = sandbox.Data(o.streams[1].pending), o.streams[1].truncated
	for i := range o.streams {
		o.streams[i].pending, o.streams[i].truncated = nil, false
	}
	if res.Stdout == nil {
		res.Stdout = sandbox.Data{}
	}
	if res.Stderr == nil {
		res.Stderr = sandbox.Data{}
	}
}
