package linux

import (
	"bytes"
	"io"
	"sync"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// outputCap collects stdout and stderr up to one shared byte budget. When a
// stream would exceed it, the bytes that fit are kept, the stream is marked
// truncated, and onLimit is called once so the run can be stopped. Reading
// goes on concurrently for both streams, so a program blocked writing one
// of them can never stall the other.
type outputCap struct {
	mu        sync.Mutex
	remaining int64
	onLimit   func()
	once      sync.Once
	out       *serialOutput // the request's OutputFunc, nil without one
}

// capturedStream is one stream's bytes and whether it was cut.
type capturedStream struct {
	buf       bytes.Buffer
	truncated bool
}

// drain reads r, the program's stream named name, to its end into s,
// respecting the shared budget.
func (c *outputCap) drain(r io.Reader, name sandbox.Stream, s *capturedStream) {
	chunk := make([]byte, 64<<10)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			keep := c.take(int64(n))
			s.buf.Write(chunk[:keep])
			if keep > 0 && c.out != nil {
				// Called before the next read: a slow OutputFunc holds the
				// pipe full and the program waits, instead of output piling
				// up in the host.
				c.out.write(name, chunk[:keep])
			}
			if keep < int64(n) {
				s.truncated = true
				c.once.Do(c.onLimit)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// take reserves up to n bytes of the budget and returns how many it got.
func (c *outputCap) take(n int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n > c.remaining {
		n = c.remaining
	}
	c.remaining -= n
	return n
}

// serialOutput hands chunks to an OutputFunc one at a time. stdout and
// stderr are read by a goroutine each, and an OutputFunc is promised it is
// never called concurrently with itself.
type serialOutput struct {
	mu sync.Mutex
	fn sandbox.OutputFunc
}

// newSerialOutput returns nil for a nil fn, so that a run without an
// OutputFunc costs nothing more than a nil check per read.
func newSerialOutput(fn sandbox.OutputFunc) *serialOutput {
	if fn == nil {
		return nil
	}
	return &serialOutput{fn: fn}
}

func (o *serialOutput) write(name sandbox.Stream, chunk []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fn(name, chunk)
}
