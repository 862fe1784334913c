package linux

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w := io.Pipe()
			s := newCellStream(r)
			var over atomic.Int32
			s.begin(m, tt.limit, func() { over.Add(1) })
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
			time.Sleep(10 * time.Millisecond)
			if tt.truncated != (over.Load() == 1) {
				t.Fatalf("onOver called %d times", over.Load())
			}
			s.begin("\x1eEND-2\x1e\n", 100, nil)
			w.Write([]byte("\x1eEND-2\x1e\n"))
			out, _ = s.end(time.Now().Add(time.Second))
			if string(out) != tt.next {
				t.Fatalf("next cell got %q, want %q", out, tt.next)
			}
			w.Close()
		})
	}
}

// Output written while no cell runs is bounded and marks the next cell's
// output as truncated.
func TestCellStreamBetweenCellsBounded(t *testing.T) {
	r, w := io.Pipe()
	s := newCellStream(r)
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
	s.begin("\x1eEND\x1e\n", 4<<20, nil)
	go w.Write([]byte("\x1eEND\x1e\n")) // the kernel marks the end of the cell
	out, truncated := s.end(time.Now().Add(5 * time.Second))
	if len(out) != maxBetweenCells || !truncated {
		t.Fatalf("kept %d bytes (truncated=%v), want %d and truncated", len(out), truncated, maxBetweenCells)
	}
	w.Close()
}
