package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/swe"
)

// TestSWEProgress: a swe run's progress on stderr. On a terminal, what the
// model and its commands wrote (a step's message, a command's output) is
// inert: no escape sequence reaches the terminal raw. Off one, the output
// is byte-exact, and a line of output left open is ended before the next
// progress line, so that it does not run into it.
func TestSWEProgress(t *testing.T) {
	events := []swe.Event{
		{Kind: swe.StepTool, Step: 1, Message: "bash: echo \x1b]0;title\x07"},
		{Kind: swe.StepTool, Step: 1, Output: []byte("a\x1b[2Jb")},
		{Kind: swe.StepModel, Step: 2, Message: "asking the model"},
	}
	for _, tc := range []struct {
		tty  bool
		want string
	}{
		{false, "swe: step 1 · tool: bash: echo \x1b]0;title\x07\na\x1b[2Jb\nswe: step 2 · model: asking the model\n"},
		{true, "swe: step 1 · tool: bash: echo \\x1b]0;title\\x07\na\\x1b[2Jb\nswe: step 2 · model: asking the model\n"},
	} {
		var stderr bytes.Buffer
		d := newDisplayOn(&bytes.Buffer{}, &stderr, tc.tty, tc.tty, false, true)
		p := newSWEProgress(d)
		for _, e := range events {
			p.event(e)
		}
		p.flush()
		p.close()
		if stderr.String() != tc.want {
			t.Errorf("tty %t: stderr\n%q\nwant\n%q", tc.tty, stderr.String(), tc.want)
		}
		if tc.tty && strings.ContainsRune(stderr.String(), 0x1b) {
			t.Errorf("a raw escape reached the terminal: %q", stderr.String())
		}
	}
}
