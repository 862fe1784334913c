package image

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

const (
	// maxLine bounds a line of a build tool's output that is parsed and
	// kept; the rest of a longer line is dropped.
	maxLine = 512
	// tailLines is how many of a tool's last lines a failure shows.
	tailLines = 12
	// maxLogTail bounds the bytes read from the end of a tool's log file.
	maxLogTail = 16 << 10
)

// ToolError reports a build step whose tool failed, with the last lines it
// printed: what went wrong is in them, not in the exit status.
type ToolError struct {
	// Step is the build step, as in Progress.Step.
	Step string
	// Err is why the tool failed, such as an *exec.ExitError.
	Err error
	// Tail holds the tool's last lines of output, oldest first, each
	// at most 512 bytes.
	Tail []string
}

func (e *ToolError) Error() string {
	if len(e.Tail) == 0 {
		return fmt.Sprintf("%s failed (%v) and printed nothing", e.Step, e.Err)
	}
	return fmt.Sprintf("%s failed (%v); its last lines:\n  %s", e.Step, e.Err, strings.Join(e.Tail, "\n  "))
}

// Unwrap returns Err.
func (e *ToolError) Unwrap() error { return e.Err }

// lineWriter splits a tool's output into lines (at \n or \r) for fn,
// each cut to maxLine bytes, and keeps the last tailLines of them.
//
// Security: a tool writes what it likes (a package's maintainer scripts,
// a manifest's prepare commands): the memory it takes is bounded whatever
// the lines' length or number.
type lineWriter struct {
	fn   func(string)
	line []byte
	long bool // the line in progress is longer than maxLine
	tail []string
}

// Write implements io.Writer; it never fails.
func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			w.add(p)
			break
		}
		w.add(p[:i])
		w.end()
		p = p[i+1:]
	}
	return n, nil
}

// add appends b to the line in progress, up to maxLine bytes.
func (w *lineWriter) add(b []byte) {
	room := maxLine - len(w.line)
	if len(b) > room {
		b, w.long = b[:room], true
	}
	w.line = append(w.line, b...)
}

// end ends the line in progress; an empty one is skipped.
func (w *lineWriter) end() {
	if len(w.line) == 0 {
		return
	}
	s := string(w.line)
	if w.long {
		s += "..."
	}
	w.line, w.long = w.line[:0], false
	w.fn(s)
	if len(w.tail) == tailLines {
		w.tail = append(w.tail[:0], w.tail[1:]...)
	}
	w.tail = append(w.tail, s)
}

// close ends the last line, if the tool did not, and returns the last
// lines.
func (w *lineWriter) close() []string {
	w.end()
	return w.tail
}

// logTail returns the last lines of a tool's log file, read through a
// lineWriter; none when the file cannot be read.
func logTail(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > maxLogTail {
		_, _ = f.Seek(-maxLogTail, io.SeekEnd)
	}
	w := &lineWriter{fn: func(string) {}}
	_, _ = io.Copy(w, io.LimitReader(f, maxLogTail))
	return w.close()
}
