package linux

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// cellStream splits a session's long-lived output stream (stdout or
// stderr) into cells. The kernel writes a marker, fresh for each cell,
// after the cell's output; end returns what came before it. Output beyond
// the cell's cap is dropped (still scanned for the marker), and onOver is
// called once so the cell can be interrupted. Output written between cells
// (a background thread) counts toward the next cell.
//
// A cell's OutputFunc gets the cell's output as it is read, except bytes
// at the end of what was read that may be the start of the marker: they
// are held back until the next read or the end of the cell tells.
// It is called with mu held, so that it is done with a cell before end
// returns the cell's Result and never sees the next cell's bytes early.
type cellStream struct {
	mu        sync.Mutex
	changed   *sync.Cond
	name      sandbox.Stream
	pending   []byte // this cell's output so far, and a possible start of the marker
	window    []byte // recent dropped bytes, for a marker split across reads
	truncated bool
	marker    []byte
	limit     int64
	onOver    func()
	out       *serialOutput // the cell's OutputFunc, nil without one
	emitted   int           // pending[:emitted] went to out
	hooked    time.Duration // time this cell's reads waited for out
	done      bool          // the marker was seen
	rest      []byte        // what followed the marker: the next cell's start
	restCut   bool          // rest was cut at maxBetweenCells
	eof       bool
}

// maxBetweenCells bounds what is kept of output written while no cell
// runs (a background thread): it waits, in host memory, for the next cell.
const maxBetweenCells = 1 << 20

func newCellStream(r io.Reader, name sandbox.Stream) *cellStream {
	s := &cellStream{name: name}
	s.changed = sync.NewCond(&s.mu)
	go s.read(r)
	return s
}

func (s *cellStream) read(r io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		s.mu.Lock()
		if n > 0 {
			s.add(buf[:n])
		}
		if err != nil {
			s.eof = true
		}
		s.changed.Broadcast()
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// add takes new bytes; s.mu is held.
func (s *cellStream) add(b []byte) {
	if s.done || s.marker == nil {
		room := maxBetweenCells - len(s.rest)
		if len(b) > room {
			b, s.restCut = b[:max(room, 0)], true
		}
		s.rest = append(s.rest, b...)
		return
	}
	if !s.truncated {
		from := max(0, len(s.pending)-len(s.marker)+1)
		s.pending = append(s.pending, b...)
		if i := bytes.Index(s.pending[from:], s.marker); i >= 0 {
			end := from + i
			s.rest = append(s.rest, s.pending[end+len(s.marker):]...)
			s.pending = s.pending[:end]
			s.done = true
			if int64(end) > s.limit {
				// The cell is over, so there is nothing left to
				// interrupt: an interrupt now would hit the kernel
				// between cells, or the next cell.
				s.pending, s.truncated = s.pending[:s.limit], true
			}
			s.emit(len(s.pending))
			return
		}
		// The marker can still start only where the rest of pending is
		// a prefix of it: everything before is the cell's output.
		known := len(s.pending) - markerPrefix(s.pending, s.marker)
		if int64(known) <= s.limit {
			s.emit(known)
			return
		}
		// The marker can only start past the cap: whatever follows, the
		// cell's output goes over it.
		s.window = append(s.window, s.pending[s.limit:]...)
		s.pending = s.pending[:s.limit]
		s.truncated = true
		s.emit(len(s.pending))
		if s.onOver != nil {
			// Called with mu held, so that whatever onOver records (the
			// cell's status) is seen by the caller of end, and it acts
			// before end returns and a next cell can start.
			s.onOver()
		}
	} else {
		s.window = append(s.window, b...)
	}
	if i := bytes.Index(s.window, s.marker); i >= 0 {
		s.rest = append(s.rest, s.window[i+len(s.marker):]...)
		s.window, s.done = nil, true
		return
	}
	if keep := len(s.marker) - 1; len(s.window) > keep {
		s.window = append(s.window[:0], s.window[len(s.window)-keep:]...)
	}
}

// markerPrefix returns the length of the longest end of b that is the
// start of marker (and not all of it).
func markerPrefix(b, marker []byte) int {
	for i := max(0, len(b)-len(marker)+1); i < len(b); i++ {
		j := bytes.IndexByte(b[i:], marker[0])
		if j < 0 {
			return 0
		}
		if i += j; bytes.HasPrefix(marker, b[i:]) {
			return len(b) - i
		}
	}
	return 0
}

// settle makes pending the cell's final output when no marker is to end
// it: the bytes held back as a possible marker are output after all.
func (s *cellStream) settle() {
	if int64(len(s.pending)) > s.limit {
		s.pending, s.truncated = s.pending[:s.limit], true
	}
	s.emit(len(s.pending))
}

// emit hands pending[s.emitted:upto] to the cell's OutputFunc; s.mu is
// held.
func (s *cellStream) emit(upto int) {
	if s.out == nil || upto <= s.emitted {
		return
	}
	start := time.Now()
	s.out.write(s.name, s.pending[s.emitted:upto])
	s.hooked += time.Since(start)
	s.emitted = upto
}

// begin starts a cell with its marker, output cap and OutputFunc (nil for
// none). Output carried over from between cells is delivered at once, as
// the start of this cell's output.
func (s *cellStream) begin(marker string, limit int64, onOver func(), out *serialOutput) {
	s.mu.Lock()
	defer s.mu.Unlock()
	carried, cut := s.rest, s.restCut
	s.pending, s.window, s.rest, s.restCut = nil, nil, nil, false
	s.truncated, s.done = false, false
	s.marker, s.limit, s.onOver = []byte(marker), limit, onOver
	s.out, s.emitted, s.hooked = out, 0, 0
	s.add(carried)
	if cut && !s.truncated {
		// What was dropped came before this cell's own output, which
		// therefore cannot be appended: pending is final.
		s.truncated = true
		s.settle()
	}
}

// end waits until the marker or end-of-file, or until the deadline, and
// returns the cell's output. Time the reader spent waiting for the
// OutputFunc does not count against the deadline: a slow OutputFunc must
// not cut a cell short and hand the rest of its output to the next cell.
func (s *cellStream) end(deadline time.Time) (out []byte, truncated bool) {
	timer := time.AfterFunc(time.Until(deadline), func() {
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.done && !s.eof {
		wait := time.Until(deadline.Add(s.hooked))
		if wait <= 0 {
			break
		}
		if s.hooked > 0 {
			timer.Reset(wait)
		}
		s.changed.Wait()
	}
	s.settle()
	out, truncated = s.pending, s.truncated
	s.pending, s.marker, s.onOver, s.out = nil, nil, nil, nil
	return out, truncated
}
