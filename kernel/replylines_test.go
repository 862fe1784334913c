package kernel

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReplyLinesAsScanner checks replyLines against bufio.Scanner, whose
// results it keeps, over lines of every kind and readers that return one
// byte, half a buffer or everything at a time.
func TestReplyLinesAsScanner(t *testing.T) {
	const max = 100
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"one line", "{}\n"},
		{"lines", "a\nbb\n\nccc\n"},
		{"last line without its newline", "a\nbb"},
		{"carriage returns", "a\r\nb\r\n"},
		{"a line of max bytes", strings.Repeat("x", max) + "\nnext\n"},
		{"a line of max+1 bytes", strings.Repeat("x", max+1) + "\nnext\n"},
		{"a long line without a newline", strings.Repeat("y", 10*max)},
		{"short lines then a long one", strings.Repeat("ab\n", 40) + strings.Repeat("z", 3*max) + "\n"},
		{"many lines through several compactions", strings.Repeat(strings.Repeat("q", 37)+"\n", 200)},
	} {
		for _, rd := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{
			{"whole", func(r io.Reader) io.Reader { return r }},
			{"one byte", iotest.OneByteReader},
			{"half", iotest.HalfReader},
		} {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				want, wantErr := scanAll(tc.in, max)
				var got []string
				l := newReplyLines(rd.wrap(strings.NewReader(tc.in)), max)
				l.buf = make([]byte, 16) // small, to make it grow and compact
				for l.scan() {
					got = append(got, string(l.bytes()))
				}
				if strings.Join(got, "|") != strings.Join(want, "|") || !errors.Is(l.err, wantErr) && l.err != wantErr {
					t.Errorf("lines %q, error %v; a Scanner gives %q, %v", got, l.err, want, wantErr)
				}
			})
		}
	}
}

func scanAll(in string, max int) ([]string, error) {
	sc := bufio.NewScanner(strings.NewReader(in))
	sc.Buffer(make([]byte, 16), max+1)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// TestReplyLinesTooLong: a line longer than max ends the channel with
// bufio.ErrTooLong after reading at most max+1 bytes of it.
func TestReplyLinesTooLong(t *testing.T) {
	const max = 1 << 20
	in := bytes.Repeat([]byte{'x'}, max+10)
	l := newReplyLines(iotest.HalfReader(bytes.NewReader(in)), max)
	if l.scan() {
		t.Fatalf("a line of %d bytes was read, want ErrTooLong", len(l.bytes()))
	}
	if !errors.Is(l.err, bufio.ErrTooLong) {
		t.Fatalf("err %v, want bufio.ErrTooLong", l.err)
	}
	if l.end > max+1 {
		t.Errorf("read %d bytes, want at most max+1 = %d", l.end, max+1)
	}
}
