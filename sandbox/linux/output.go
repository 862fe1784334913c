package linux

import (
	"bytes"
	"io"
	"sync"
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
}

// capturedStream is one stream's bytes and whether it was cut.
type capturedStream struct {
	buf       bytes.Buffer
	truncated bool
}

// drain reads r to its end into s, respecting the shared budget.
func (c *outputCap) drain(r io.Reader, s *capturedStream) {
	chunk := make([]byte, 64<<10)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			keep := c.take(int64(n))
			s.buf.Write(chunk[:keep])
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
