package linux

import (
	"io"
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

func TestCellStream(t *testing.T) {
	const m = "\x1eEND-1\x1e\n"
	tests := []struct {
		name      string
		writes    []string
		limit     int64
		want      string
		truncated bool
		next      string // what the following cell starts with
	}{
		{"simple", []string{"hello\n", m}, 100, "hello\n", false, ""},
		{"marker split across writes", []string{"ab", m[:3], m[3:] + "late"}, 100, "ab", false, "late"},
		{"empty cell", []string{m}, 100, "", false, ""},
		{"over the cap", []string{strings.Repeat("x", 50), strings.Repeat("y", 50), m}, 60, strings.Repeat("x", 50) + strings.Repeat("y", 10), true, ""},
		{"marker split after the cap", []string{strings.Repeat("x", 70), m[:4], m[4:] + "z"}, 60, strings.Repeat("x", 60), true, "z"},
		{"marker split across the cap", []string{strings.Repeat("x", 58) + m[:4], m[4:]}, 60, strings.Repeat("x", 58), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w := io.Pipe()
			s := newCellStream(r, sandbox.StreamStdout)
			var over atomic.Int32
			var hook hookRecorder
			s.begin(m, tt.limit, func() { over.Add(1) }, newSerialOutput(hook.fn))
			go func() {
				for _, chunk := range tt.writes {
					w.Write([]byte(chunk))
					time.Sleep(time.Millisecond)
				}
			}()
			out, truncated := s.end(time.Now().Add(2 * time.Second))
			if string(out) != tt.want || truncated != tt.truncated {
				t.Fatalf("got %q truncated=%v; want %q truncated=%v", out, truncated, tt.want, tt.truncated)
			}
			if got := hook.take(); got != string(out) {
				t.Fatalf("the OutputFunc got %q, the result is %q", got, out)
			}
			time.Sleep(10 * time.Millisecond)
			if tt.truncated != (over.Load() == 1) {
				t.Fatalf("onOver called %d times", over.Load())
			}
			s.begin("\x1eEND-2\x1e\n", 100, nil, newSerialOutput(hook.fn))
			w.Write([]byte("\x1eEND-2\x1e\n"))
			out, _ = s.end(time.Now().Add(time.Second))
			if string(out) != tt.next {
				t.Fatalf("next cell got %q, want %q", out, tt.next)
			}
			if got := hook.take(); got != tt.next {
				t.Fatalf("the next cell's OutputFunc got %q, want %q", got, tt.next)
			}
			w.Close()
		})
	}
}

// TestCellStreamHoldBack drives add directly, one read at a time, and
// checks what the OutputFunc has been given after each: everything read
// except an end that may be the start of the marker, and nothing past the
// cap.
func TestCellStreamHoldBack(t *testing.T) {
	const m = "\x1eEND\x1e\n"
	tests := []struct {
		name      string
		before    string   // written while no cell runs
		reads     []string // read while the cell runs
		limit     int64
		delivered []string // given to the OutputFunc by begin, then by each read
		atEnd     string   // given to it by end
		want      string
		truncated bool
	}{
		{name: "no marker yet", reads: []string{"hello\n", "world\n"}, limit: 100,
			delivered: []string{"", "hello\n", "world\n"}, want: "hello\nworld\n"},
		{name: "no marker by the deadline", reads: []string{"abc\x1eEN"}, limit: 100,
			delivered: []string{"", "abc"}, atEnd: "\x1eEN", want: "abc\x1eEN"},
		{name: "marker at start", reads: []string{m + "next"}, limit: 100,
			delivered: []string{"", ""}, want: ""},
		{name: "marker split across reads", reads: []string{"ab" + m[:3], m[3:]}, limit: 100,
			delivered: []string{"", "ab", ""}, want: "ab"},
		{name: "marker split in three", reads: []string{"ab\x1e", "EN", "D\x1e\n"}, limit: 100,
			delivered: []string{"", "ab", "", ""}, want: "ab"},
		{name: "a held-back end that is not the marker", reads: []string{"ab\x1eEN", "X\n", m}, limit: 100,
			delivered: []string{"", "ab", "\x1eENX\n", ""}, want: "ab\x1eENX\n"},
		{name: "marker-looking output", reads: []string{"\x1eEND\x1e.", m}, limit: 100,
			delivered: []string{"", "\x1eEND\x1e.", ""}, want: "\x1eEND\x1e."},
		{name: "over the cap", reads: []string{"abcdefgh", "ij", m}, limit: 5,
			delivered: []string{"", "abcde", "", ""}, want: "abcde", truncated: true},
		{name: "over the cap with the marker in the same read", reads: []string{"abcdefgh" + m}, limit: 5,
			delivered: []string{"", "abcde"}, want: "abcde", truncated: true},
		{name: "marker start across the cap", reads: []string{"abcd" + m[:3], m[3:]}, limit: 5,
			delivered: []string{"", "abcd", ""}, want: "abcd"},
		{name: "held back across the cap, then not the marker", reads: []string{"abcd\x1eEN", "Z"}, limit: 5,
			delivered: []string{"", "abcd", "\x1e"}, want: "abcd\x1e", truncated: true},
		{name: "held back across the cap by the deadline", reads: []string{"abcd\x1eEN"}, limit: 5,
			delivered: []string{"", "abcd"}, atEnd: "\x1e", want: "abcd\x1e", truncated: true},
		{name: "written between cells", before: "bg\n", reads: []string{"fg\n", m}, limit: 100,
			delivered: []string{"bg\n", "fg\n", ""}, want: "bg\nfg\n"},
		{name: "written between cells, over the cap", before: "background\n", reads: []string{"fg\n", m}, limit: 4,
			delivered: []string{"back", "", ""}, want: "back", truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &cellStream{name: sandbox.StreamStdout}
			s.changed = sync.NewCond(&s.mu)
			add := func(b string) {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.add([]byte(b))
			}
			add(tt.before)
			var hook hookRecorder
			s.begin(m, tt.limit, func() {}, newSerialOutput(hook.fn))
			got := []string{hook.take()}
			for _, b := range tt.reads {
				add(b)
				got = append(got, hook.take())
			}
			if strings.Join(got, "|") != strings.Join(tt.delivered, "|") {
				t.Errorf("delivered %q, want %q", got, tt.delivered)
			}
			out, truncated := s.end(time.Now())
			if atEnd := hook.take(); atEnd != tt.atEnd {
				t.Errorf("end delivered %q, want %q", atEnd, tt.atEnd)
			}
			if string(out) != tt.want || truncated != tt.truncated {
				t.Errorf("result %q truncated=%v; want %q truncated=%v", out, truncated, tt.want, tt.truncated)
			}
		})
	}
}

// TestCellStreamSlowOutputFunc proves a slow OutputFunc delays a cell's
// end instead of cutting its output: the time the reader spent in it does
// not count against the deadline.
func TestCellStreamSlowOutputFunc(t *testing.T) {
	const m = "\x1eEND\x1e\n"
	r, w := io.Pipe()
	s := newCellStream(r, sandbox.StreamStdout)
	var hook hookRecorder
	slow := func(stream sandbox.Stream, chunk []byte) {
		time.Sleep(100 * time.Millisecond)
		hook.fn(stream, chunk)
	}
	s.begin(m, 100, nil, newSerialOutput(slow))
	go func() {
		for _, b := range []string{"a", "b", "c", m} {
			w.Write([]byte(b))
		}
	}()
	time.Sleep(10 * time.Millisecond) // the reader is in the OutputFunc
	out, _ := s.end(time.Now().Add(20 * time.Millisecond))
	if string(out) != "abc" || hook.take() != "abc" {
		t.Fatalf("got %q, want all of %q", out, "abc")
	}
	w.Close()
}

// Output written while no cell runs is bounded and marks the next cell's
// output as truncated.
func TestCellStreamBetweenCellsBounded(t *testing.T) {
	r, w := io.Pipe()
	s := newCellStream(r, sandbox.StreamStdout)
	wrote := make(chan struct{})
	go func() {
		chunk := make([]byte, 64<<10)
		for i := 0; i < 40; i++ { // 2.5 MiB with no cell running
			w.Write(chunk)
		}
		close(wrote)
	}()
	<-wrote
	time.Sleep(20 * time.Millisecond) // let the reader take the last chunk
	var hook hookRecorder
	s.begin("\x1eEND\x1e\n", 4<<20, nil, newSerialOutput(hook.fn))
	go w.Write([]byte("\x1eEND\x1e\n")) // the kernel marks the end of the cell
	out, truncated := s.end(time.Now().Add(5 * time.Second))
	if len(out) != maxBetweenCells || !truncated {
		t.Fatalf("kept %d bytes (truncated=%v), want %d and truncated", len(out), truncated, maxBetweenCells)
	}
	if got := hook.take(); got != string(out) {
		t.Fatalf("the OutputFunc got %d bytes, the result has %d", len(got), len(out))
	}
	w.Close()
}
