package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"golang.org/x/text/transform"
)

// inertCases are terminal attacks and ordinary text, with what a terminal
// must be sent for each.
var inertCases = []struct {
	name, in, want string
}{
	{"plain", "hello, world\n", "hello, world\n"},
	{"tab and newlines", "a\tb\n\nc", "a\tb\n\nc"},
	{"unicode text", "héllo 日本 😀 ½\n", "héllo 日本 😀 ½\n"},
	{"conceal (SGR 8)", "\x1b[8mhidden", `\x1b[8mhidden`},
	{"clipboard (OSC 52, BEL)", "\x1b]52;c;ZXZpbA==\x07", `\x1b]52;c;ZXZpbA==\x07`},
	{"title (OSC 0, ST)", "\x1b]0;pwned\x1b\\", `\x1b]0;pwned\x1b\`},
	{"DCS", "\x1bP+q544e\x1b\\", `\x1bP+q544e\x1b\`},
	{"cursor up, erase line", "\x1b[1A\x1b[2K", `\x1b[1A\x1b[2K`},
	{"fake summary over a lone CR", "progress 100%\rcrucible: ok (exit 0)", `progress 100%\rcrucible: ok (exit 0)`},
	{"CRLF line ends stay", "a\r\nb\r\n", "a\r\nb\r\n"},
	{"CR at the end", "done\r", `done\r`},
	{"CR CR LF", "a\r\r\n", `a\r` + "\r\n"},
	{"backspaces", "secret\b\b\b\b\b\b", `secret\x08\x08\x08\x08\x08\x08`},
	{"DEL and NUL", "a\x7fb\x00", `a\x7fb\x00`},
	{"C1 CSI as UTF-8 (U+009B)", "\u009b2J", `\u009b2J`},
	{"raw 8-bit CSI byte", "\x9b2J", `\x9b2J`},
	{"right-to-left override", "\u202eexe.gnp", `\u202eexe.gnp`},
	{"isolates and marks", "\u2066a\u2069\u200f\u061c", `\u2066a\u2069\u200f\u061c`},
	{"truncated character at the end", "ok \xe2\x80", `ok \xe2\x80`},
	{"invalid UTF-8 inside", "a\xffb", `a\xffb`},
}

func TestInertText(t *testing.T) {
	for _, tt := range inertCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := inert(tt.in); got != tt.want {
				t.Errorf("inert(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestInertTextStreamed writes each case in two pieces split at every byte,
// and byte by byte: a sequence, a \r\n or a character split between writes
// must come out as when written whole.
func TestInertTextStreamed(t *testing.T) {
	for _, tt := range inertCases {
		t.Run(tt.name, func(t *testing.T) {
			for cut := 0; cut <= len(tt.in); cut++ {
				if got := streamed(t, tt.in[:cut], tt.in[cut:]); got != tt.want {
					t.Errorf("written as %q + %q: got %q, want %q", tt.in[:cut], tt.in[cut:], got, tt.want)
				}
			}
			pieces := make([]string, len(tt.in))
			for i := 0; i < len(tt.in); i++ { // bytes, not runes
				pieces[i] = tt.in[i : i+1]
			}
			if got := streamed(t, pieces...); got != tt.want {
				t.Errorf("written byte by byte: got %q, want %q", got, tt.want)
			}
		})
	}
}

func streamed(t *testing.T, pieces ...string) string {
	t.Helper()
	var out bytes.Buffer
	w := transform.NewWriter(&out, inertText{})
	for _, p := range pieces {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestInertTextKeepsJSON checks that JSON shown inert is still the same
// JSON: its strings may hold C1 and bidirectional characters raw.
func TestInertTextKeepsJSON(t *testing.T) {
	in := map[string]string{"stdout": "\x1b[8m\u009b\u202e\r\x07 ok"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(inert(string(b))), &back); err != nil || back["stdout"] != in["stdout"] {
		t.Errorf("inert JSON %s decodes to %q (%v), want %q", inert(string(b)), back, err, in)
	}
}
