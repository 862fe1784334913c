package linux

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// hookRecorder is a cell's OutputFunc that keeps what it was given.
type hookRecorder struct {
	mu     sync.Mutex
	chunks []string
}

func (h *hookRecorder) fn(_ sandbox.Stream, chunk []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chunks = append(h.chunks, string(chunk))
}

// take returns what was delivered since the last take, concatenated.
func (h *hookRecorder) take() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := strings.Join(h.chunks, "")
	h.chunks = nil
	return s
}

// newTestStream returns a cellStream reading a fresh pipe, and the pipe's
// write end; both are closed when t ends.
func newTestStream(t *testing.T) (*cellStream, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	s, err := newCellStream(r, sandbox.StreamStdout)
	if err != nil {
		t.Fatal(err)
	}
	return s, w
}

// TestCellStream writes a cell's output, then ends the cell at once, as a
// session does once the kernel replied: what the reader has not taken yet
// is still in the pipe, and endAnswered must find it all, in order.
// The next cell gets none of it.
func TestCellStream(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 20<<10) // 320 KiB: more than a pipe and a read hold
	tests := []struct {
		name      string
		writes    []string
		limit     int64
		want      string
		truncated bool
	}{
		{"simple", []string{"hello\n"}, 100, "hello\n", false},
		{"empty cell", nil, 100, "", false},
		{"many writes", []string{"a", "b", "c\n", "d"}, 100, "abc\nd", false},
		{"larger than the pipe", []string{string(big)}, 1 << 20, string(big), false},
		{"over the cap", []string{strings.Repeat("x", 50), strings.Repeat("y", 50)}, 60, strings.Repeat("x", 50) + strings.Repeat("y", 10), true},
		{"over the cap, larger than the pipe", []string{string(big)}, 1000, string(big[:1000]), true},
		{"marker-looking output", []string{"\x1eCRUCIBLE-END-OF-CELL-1-x\x1e\n", "after"}, 100, "\x1eCRUCIBLE-END-OF-CELL-1-x\x1e\nafter", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, w := newTestStream(t)
			var over atomic.Int32
			var hook hookRecorder
			s.begin(tt.limit, func() { over.Add(1) }, newSerialOutput(hook.fn))
			for _, chunk := range tt.writes {
				if _, err := w.Write([]byte(chunk)); err != nil {
					t.Fatal(err)
				}
			}
			out, truncated, err := s.endAnswered()
			if err != nil {
				t.Fatalf("endAnswered: %v", err)
			}
			if string(out) != tt.want || truncated != tt.truncated {
				t.Fatalf("got %d bytes %.80q truncated=%v; want %d bytes %.80q truncated=%v", len(out), out, truncated, len(tt.want), tt.want, tt.truncated)
			}
			if got := hook.take(); got != string(out) {
				t.Fatalf("the OutputFunc got %d bytes, the result has %d", len(got), len(out))
			}
			// onOver interrupts a running cell: once at most, and never
			// for what endAnswered drains (the cell is over).
			if n := over.Load(); n > 1 || n == 1 && !tt.truncated {
				t.Fatalf("onOver called %d times", n)
			}
			s.begin(100, nil, newSerialOutput(hook.fn))
			w.Write([]byte("next"))
			if out, _, _ = s.endAnswered(); string(out) != "next" || hook.take() != "next" {
				t.Fatalf("next cell got %q, want %q", out, "next")
			}
		})
	}
}

// TestCellStreamEndsUnderEndlessWriter proves a writer that never stops
// (a thread a cell left behind) cannot keep the host ending a cell: the
// cell ends with what the pipe held, and the rest is the next cell's.
func TestCellStreamEndsUnderEndlessWriter(t *testing.T) {
	s, w := newTestStream(t)
	s.begin(1<<30, nil, nil)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		chunk := bytes.Repeat([]byte("z"), 4096)
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			s.endAnswered()
			s.begin(1<<30, nil, nil)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("endAnswered did not return while a writer kept writing")
	}
}

// A running cell's output going over the cap calls onOver, once, as the
// reader finds it.
func TestCellStreamOnOver(t *testing.T) {
	s, w := newTestStream(t)
	var over atomic.Int32
	s.begin(60, func() { over.Add(1) }, nil)
	w.Write(make([]byte, 50))
	w.Write(make([]byte, 50))
	w.Write(make([]byte, 50))
	for deadline := time.Now().Add(5 * time.Second); over.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if out, truncated, _ := s.endAnswered(); len(out) != 60 || !truncated || over.Load() != 1 {
		t.Fatalf("got %d bytes, truncated=%v, onOver called %d times; want 60, true, once", len(out), truncated, over.Load())
	}
}

// Output written before the first cell (the interpreter starting) starts
// the first cell's output; past maxEarly it is cut, and the cell's output
// is marked truncated.
func TestCellStreamEarlyOutput(t *testing.T) {
	for _, tc := range []struct {
		name      string
		early     int
		want      int
		truncated bool
	}{
		{"small", 10, 10 + len("fg"), false},
		{"over maxEarly", 2*maxEarly + 5, maxEarly, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, w := newTestStream(t)
			wrote := make(chan struct{})
			go func() {
				w.Write(make([]byte, tc.early))
				close(wrote)
			}()
			<-wrote
			// The reader may not have taken it all: the first begin sees
			// what it has, endAnswered the rest.
			time.Sleep(20 * time.Millisecond)
			var hook hookRecorder
			s.begin(4<<20, nil, newSerialOutput(hook.fn))
			w.Write([]byte("fg"))
			out, truncated, err := s.endAnswered()
			if err != nil || len(out) != tc.want || truncated != tc.truncated {
				t.Fatalf("kept %d bytes (truncated=%v, %v), want %d (truncated=%v)", len(out), truncated, err, tc.want, tc.truncated)
			}
			if got := hook.take(); got != string(out) {
				t.Fatalf("the OutputFunc got %d bytes, the result has %d", len(got), len(out))
			}
		})
	}
}

// TestCellStreamEndDead proves a cell whose sandbox is gone gets its output
// up to end-of-file, and a slow OutputFunc delays that end instead of
// cutting it: the time the reader spent in it does not count against the
// deadline. Without end-of-file, the deadline ends the cell.
func TestCellStreamEndDead(t *testing.T) {
	t.Run("slow OutputFunc", func(t *testing.T) {
		s, w := newTestStream(t)
		var hook hookRecorder
		slow := func(stream sandbox.Stream, chunk []byte) {
			time.Sleep(100 * time.Millisecond)
			hook.fn(stream, chunk)
		}
		s.begin(100, nil, newSerialOutput(slow))
		go func() {
			for _, b := range []string{"a", "b", "c"} {
				w.Write([]byte(b))
				time.Sleep(5 * time.Millisecond)
			}
			w.Close()
		}()
		time.Sleep(10 * time.Millisecond) // the reader is in the OutputFunc
		out, _ := s.endDead(time.Now().Add(20 * time.Millisecond))
		if string(out) != "abc" || hook.take() != "abc" {
			t.Fatalf("got %q, want all of %q", out, "abc")
		}
	})
	t.Run("no end-of-file", func(t *testing.T) {
		s, w := newTestStream(t)
		s.begin(100, nil, nil)
		w.Write([]byte("partial"))
		time.Sleep(10 * time.Millisecond)
		if out, _ := s.endDead(time.Now().Add(50 * time.Millisecond)); string(out) != "partial" {
			t.Fatalf("got %q, want %q", out, "partial")
		}
	})
}
