package linux

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// cellStream splits a session's long-lived output stream (stdout or
// stderr) into cells. The kernel writes a marker, fresh for each cell,
// after the cell's output; next returns what came before it. Output beyond
// the cell's cap is dropped (still scanned for the marker), and onOver is
// called once so the cell can be interrupted. Output written between cells
// (a background thread) counts toward the next cell.
type cellStream struct {
	mu        sync.Mutex
	changed   *sync.Cond
	pending   []byte // this cell's output so far (at most limit bytes)
	window    []byte // recent dropped bytes, for a marker split across reads
	truncated bool
	marker    []byte
	limit     int64
	onOver    func()
	done      bool   // the marker was seen
	rest      []byte // what followed the marker: the next cell's start
	restCut   bool   // rest was cut at maxBetweenCells
	eof       bool
}

// maxBetweenCells bounds what is kept of output written while no cell
// runs (a background thread): it waits, in host memory, for the next cell.
const maxBetweenCells = 1 << 20

func newCellStream(r io.Reader) *cellStream {
	s := &cellStream{}
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
			return
		}
		if int64(len(s.pending)) <= s.limit {
			return
		}
		s.window = append(s.window, s.pending[s.limit:]...)
		s.pending = s.pending[:s.limit]
		s.truncated = true
		if s.onOver != nil {
			go s.onOver()
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

// begin starts a cell with its marker and output cap.
func (s *cellStream) begin(marker string, limit int64, onOver func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	carried, cut := s.rest, s.restCut
	s.pending, s.window, s.rest, s.restCut = nil, nil, nil, false
	s.truncated, s.done = false, false
	s.marker, s.limit, s.onOver = []byte(marker), limit, onOver
	s.add(carried)
	s.truncated = s.truncated || cut
}

// end waits until the marker or end-of-file, or until the deadline, and
// returns the cell's output.
func (s *cellStream) end(deadline time.Time) (out []byte, truncated bool) {
	timer := time.AfterFunc(time.Until(deadline), func() {
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.done && !s.eof && time.Now().Before(deadline) {
		s.changed.Wait()
	}
	out, truncated = s.pending, s.truncated
	s.pending, s.marker, s.onOver = nil, nil, nil
	return out, truncated
}
