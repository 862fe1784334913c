package kernel

import (
	"bufio"
	"bytes"
	"io"
)

// replyLines splits the kernel's reply channel into lines of at most max
// bytes, with the same results as a bufio.Scanner over ScanLines with
// that maximum (the last line may lack its newline; a line longer than
// max is bufio.ErrTooLong), but looking for each newline only in the
// bytes it has not looked at yet.
//
// Security: the channel is written by the kernel's process, which the
// program shares, so the host's work reading it is the program's to
// choose. A Scanner searches its whole buffer again after every read: a
// 64 MiB line without a newline, read in pipe-sized pieces, made the host
// search about 32 GiB, seconds of CPU on an idle machine and the better
// part of a minute on a loaded one, while the cell ran on. Here each byte
// is searched once and copied at most a few times.
type replyLines struct {
	r                    io.Reader
	max                  int
	buf                  []byte
	start, end, searched int // the line begins at start; buf[searched:end] is not searched yet
	err                  error
	line                 []byte
}

// newReplyLines reads lines of at most max bytes from r.
func newReplyLines(r io.Reader, max int) *replyLines {
	return &replyLines{r: r, max: max, buf: make([]byte, min(64<<10, max+1))}
}

// scan reads the next line, which bytes returns; false at the end of the
// channel or on an error, which l.err then holds (nil at a clean end).
func (l *replyLines) scan() bool {
	for {
		if i := bytes.IndexByte(l.buf[l.searched:l.end], '\n'); i >= 0 {
			nl := l.searched + i
			l.line = bytes.TrimSuffix(l.buf[l.start:nl], []byte{'\r'})
			l.start, l.searched = nl+1, nl+1
			return true
		}
		l.searched = l.end
		if l.end-l.start > l.max {
			l.err = bufio.ErrTooLong
			return false
		}
		if l.err != nil {
			if l.end > l.start { // the last line, without its newline
				l.line = bytes.TrimSuffix(l.buf[l.start:l.end], []byte{'\r'})
				l.start, l.searched = l.end, l.end
				return true
			}
			if l.err == io.EOF {
				l.err = nil
			}
			return false
		}
		l.makeRoom()
		n, err := l.r.Read(l.buf[l.end:])
		l.end += n
		if err != nil {
			l.err = err
		}
	}
}

// makeRoom gives the buffer free space after end, if it has none: it
// moves the line to the front when that frees half the buffer or the
// buffer may grow no more, else doubles the buffer, up to max+1 bytes (a
// full buffer of max+1 bytes with no newline is a line too long, which
// scan reports before it asks for room).
func (l *replyLines) makeRoom() {
	if l.end < len(l.buf) {
		return
	}
	if l.start > 0 && (l.start >= len(l.buf)/2 || len(l.buf) > l.max) {
		n := copy(l.buf, l.buf[l.start:l.end])
		l.searched -= l.start
		l.start, l.end = 0, n
		return
	}
	grown := make([]byte, min(2*len(l.buf), l.max+1))
	n := copy(grown, l.buf[l.start:l.end])
	l.searched -= l.start
	l.buf, l.start, l.end = grown, 0, n
}

// bytes is the line scan read, valid until the next scan.
func (l *replyLines) bytes() []byte { return l.line }
