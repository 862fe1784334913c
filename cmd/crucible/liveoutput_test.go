package main

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// gate is a writer that blocks every write until opened, as a paused
// terminal or a pipe nobody reads does.
type gate struct {
	open chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

// TestLiveOutput checks that live output keeps the streams apart and in
// order, is inert on a terminal even when a sequence or a character is
// split between chunks, and that the OutputFunc never waits for the
// terminal: every call returns while the terminal blocks.
func TestLiveOutput(t *testing.T) {
	chunks := []struct {
		stream sandbox.Stream
		data   string
	}{
		{sandbox.StreamStdout, "one\n\x1b"},
		{sandbox.StreamStderr, "warn \xe2\x80"},
		{sandbox.StreamStdout, "[8mtwo\r"},
		{sandbox.StreamStderr, "\xae\n"},
		{sandbox.StreamStdout, "\nthree"},
	}
	tests := []struct {
		name           string
		tty            bool
		stdout, stderr string
	}{
		{"pipe: byte-exact", false, "one\n\x1b[8mtwo\r\nthree", "warn \u202e\n"},
		{"terminal: inert", true, "one\n" + `\x1b[8mtwo` + "\r\nthree", `warn \u202e` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open := make(chan struct{})
			stdout, stderr := &gate{open: open}, &gate{open: open}
			d := newDisplayOn(stdout, stderr, tt.tty, tt.tty, false, true)
			live := d.live()
			returned := make(chan struct{})
			go func() {
				for _, c := range chunks {
					live.output(c.stream, []byte(c.data))
				}
				close(returned)
			}()
			select {
			case <-returned:
			case <-time.After(time.Minute): // a bound that only keeps a failing test from hanging
				t.Fatal("the OutputFunc waited for the blocked terminal")
			}
			close(open)
			live.close()
			d.stdout.flush()
			d.stderr.flush()
			if got := stdout.buf.String(); got != tt.stdout {
				t.Errorf("stdout %q, want %q", got, tt.stdout)
			}
			if got := stderr.buf.String(); got != tt.stderr {
				t.Errorf("stderr %q, want %q", got, tt.stderr)
			}
		})
	}
}
