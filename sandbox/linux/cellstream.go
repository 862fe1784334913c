package linux

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// cellStream splits a session's long-lived output stream (stdout or
// stderr) into cells, by time rather than by content: a cell's output is
// what the session wrote from the start of the cell to the kernel's reply
// (the kernel flushes the cell's streams before it replies, so endAnswered,
// which reads every byte then in the pipe, finds the end of the cell's
// output).
//
// Security: the split uses nothing the sandbox sees. An in-band end
// marker, however fresh, is read by the cell (it runs in the kernel's
// process, which holds the marker), and a cell that printed it followed by
// text ended its own output early and put the text at the start of the
// next cell's. Here a cell can print anything: its bytes are its own.
// What a cell cannot prevent is a thread or process it leaves behind
// writing after the reply or while a later cell runs: that output is the
// later cell's, as it would be in any interpreter whose threads outlive a
// cell (and the session is stopped soon after a cell, see Session).
//
// Every byte is taken from the pipe with mu held, by the reader goroutine
// or by drain, so that once drain finds the pipe empty every byte written
// before has been added, in order.
//
// A cell's OutputFunc gets the cell's output as it is read. It is called
// with mu held, so that it is done with a cell before the cell's Result is
// returned, and never sees the next cell's bytes.
type cellStream struct {
	mu        sync.Mutex
	changed   *sync.Cond
	name      sandbox.Stream
	conn      syscall.RawConn
	buf       []byte // what a read takes from the pipe; used with mu held
	running   bool   // a cell is running: between begin and its end
	pending   []byte // this cell's output so far
	truncated bool
	limit     int64
	onOver    func()
	out       *serialOutput // the cell's OutputFunc, nil without one
	hooked    time.Duration // time this cell's reads waited for out
	early     []byte        // written while no cell ran, for the next cell
	earlyCut  bool          // early was cut at maxEarly
	eof       bool
}

// maxEarly bounds what is kept of output written while no cell runs (the
// interpreter's warnings as it starts; a cell's leftovers before the
// session is stopped): it waits, in host memory, for the next cell.
const maxEarly = 1 << 20

// newCellStream starts reading r, the host's end of a session's stdout or
// stderr pipe.
func newCellStream(r *os.File, name sandbox.Stream) (*cellStream, error) {
	conn, err := r.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%s pipe: %w", name, err)
	}
	s := &cellStream{name: name, conn: conn, buf: make([]byte, 64<<10)}
	s.changed = sync.NewCond(&s.mu)
	go s.read()
	return s, nil
}

// read takes the stream's bytes as they come, until end-of-file. The
// RawConn waits, without holding mu, until the pipe is readable; the bytes
// are then read and added with mu held.
func (s *cellStream) read() {
	for done := false; !done; {
		err := s.conn.Read(func(fd uintptr) bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			n, err := unix.Read(int(fd), s.buf)
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // not readable after all: wait again
			case errors.Is(err, unix.EINTR):
				return true // read again
			}
			if n > 0 {
				s.add(s.buf[:n])
			} else {
				done = true // end-of-file or a read error: the pipe is over
			}
			return true
		})
		if err != nil {
			done = true // the host closed its end
		}
	}
	s.mu.Lock()
	s.eof = true
	s.changed.Broadcast()
	s.mu.Unlock()
}

// add takes new bytes; s.mu is held.
func (s *cellStream) add(b []byte) {
	defer s.changed.Broadcast()
	if !s.running {
		room := maxEarly - len(s.early)
		if len(b) > room {
			b, s.earlyCut = b[:max(room, 0)], true
		}
		s.early = append(s.early, b...)
		return
	}
	if s.truncated {
		return
	}
	if room := s.limit - int64(len(s.pending)); int64(len(b)) > room {
		b, s.truncated = b[:room], true
	}
	s.pending = append(s.pending, b...)
	s.emit(b)
	if s.truncated && s.onOver != nil {
		// Called with mu held, so that whatever onOver records (the
		// cell's status) is seen once the cell's output is taken, and
		// it acts before a next cell can start.
		s.onOver()
	}
}

// emit hands b to the cell's OutputFunc; s.mu is held.
func (s *cellStream) emit(b []byte) {
	if s.out == nil || len(b) == 0 {
		return
	}
	start := time.Now()
	s.out.write(s.name, b)
	s.hooked += time.Since(start)
}

// begin starts a cell with its output cap and OutputFunc (nil for none).
// Output written while no cell ran is delivered at once, as the start of
// this cell's output.
func (s *cellStream) begin(limit int64, onOver func(), out *serialOutput) {
	s.mu.Lock()
	defer s.mu.Unlock()
	early, cut := s.early, s.earlyCut
	s.early, s.earlyCut = nil, false
	s.pending, s.truncated, s.running = nil, false, true
	s.limit, s.onOver, s.out, s.hooked = limit, onOver, out, 0
	s.add(early)
	if cut && !s.truncated {
		// What was dropped came before this cell's own output, which
		// therefore cannot be appended.
		s.truncated = true
	}
}

// endAnswered ends a cell the kernel answered. The kernel flushed the
// cell's output before replying, so the pipe holds the last of it now: as
// much as it holds is read, and nothing is waited for. Bytes written after
// that (a thread the cell left behind) are the next cell's.
func (s *cellStream) endAnswered() (out []byte, truncated bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The cell is over: an interrupt now would hit the kernel between
	// cells, or the next cell.
	s.onOver = nil
	if !s.eof {
		// Control, not Read: the reader goroutine holds the file's read
		// lock while it waits for the pipe to be readable.
		var derr error
		if err = s.conn.Control(func(fd uintptr) { derr = s.drain(int(fd)) }); err == nil {
			err = derr
		}
	}
	out, truncated = s.take()
	return out, truncated, err
}

// drain adds the bytes the pipe holds now, and no more: a writer that
// keeps writing cannot keep the host here. s.mu is held.
func (s *cellStream) drain(fd int) error {
	left, err := unix.IoctlGetInt(fd, unix.TIOCINQ) // FIONREAD: bytes in the pipe
	for err == nil && left > 0 {
		var n int
		if n, err = unix.Read(fd, s.buf[:min(left, len(s.buf))]); errors.Is(err, unix.EINTR) {
			err = nil
			continue
		} else if n <= 0 {
			return err
		}
		s.add(s.buf[:n])
		left -= n
	}
	return err
}

// endDead ends a cell whose sandbox was killed or whose interpreter
// exited: it waits until end-of-file (the last process holding the pipe is
// gone) or the deadline. Time the reader spent waiting for the OutputFunc
// does not count against the deadline: a slow OutputFunc must not cut the
// cell's output short.
func (s *cellStream) endDead(deadline time.Time) (out []byte, truncated bool) {
	timer := time.AfterFunc(time.Until(deadline), func() {
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onOver = nil
	for !s.eof {
		wait := time.Until(deadline.Add(s.hooked))
		if wait <= 0 {
			break
		}
		if s.hooked > 0 {
			timer.Reset(wait)
		}
		s.changed.Wait()
	}
	return s.take()
}

// take ends the cell and returns its output; s.mu is held.
func (s *cellStream) take() (out []byte, truncated bool) {
	out, truncated = s.pending, s.truncated
	s.pending, s.running, s.out = nil, false, nil
	return out, truncated
}
