package docker

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestCellOutput splits output into cells: what arrives while no cell runs
// starts the next cell's output (cut at maxEarly); a stream is cut at the
// cell's limit, once, calling onOver; the OutputFunc sees what is kept.
func TestCellOutput(t *testing.T) {
	for _, tc := range []struct {
		name           string
		early          string
		during         []string
		limit          int64
		stdout         string
		trunc, overRan bool
	}{
		{"within the limit", "", []string{"ab", "cd"}, 10, "abcd", false, false},
		{"early output first", "warn ", []string{"x"}, 10, "warn x", false, false},
		{"cut at the limit", "", []string{"12345", "6789"}, 7, "1234567", true, true},
		{"early output past the limit", "0123456789", []string{"x"}, 4, "0123", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o cellOutput
			o.add(0, []byte(tc.early))
			overs, emitted := 0, ""
			o.begin(tc.limit, func() { overs++ }, func(s sandbox.Stream, b []byte) {
				if s == sandbox.StreamStdout {
					emitted += string(b)
				}
			})
			for _, d := range tc.during {
				o.add(0, []byte(d))
			}
			o.add(1, []byte("e"))
			var res sandbox.Result
			o.end(&res)
			if string(res.Stdout) != tc.stdout || res.StdoutTruncated != tc.trunc || (overs == 1) != tc.overRan || overs > 1 {
				t.Errorf("stdout %q truncated %v, onOver %d times; want %q %v %v", res.Stdout, res.StdoutTruncated, overs, tc.stdout, tc.trunc, tc.overRan)
			}
			if emitted != tc.stdout {
				t.Errorf("OutputFunc saw %q, want %q", emitted, tc.stdout)
			}
			if string(res.Stderr) != "e" {
				t.Errorf("stderr %q, want %q", res.Stderr, "e")
			}
			// After the cell, output waits for the next one.
			o.add(0, []byte("late"))
			o.begin(100, nil, nil)
			o.end(&res)
			if string(res.Stdout) != "late" {
				t.Errorf("the next cell's stdout %q, want the late output", res.Stdout)
			}
		})
	}
	var o cellOutput
	o.add(0, make([]byte, maxEarly+10))
	o.begin(2*maxEarly, nil, nil)
	var res sandbox.Result
	o.end(&res)
	if len(res.Stdout) != maxEarly || !res.StdoutTruncated {
		t.Errorf("early output over maxEarly: %d bytes, truncated %v; want %d, truncated", len(res.Stdout), res.StdoutTruncated, maxEarly)
	}
}
