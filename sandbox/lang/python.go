package lang

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// The two headers a CPython 3.11 report starts with: a plain traceback, and
// the top-level traceback of an exception group, whose following lines are
// prefixed with pyGroupPrefix.
const (
	pyHeader      = "Traceback (most recent call last):"
	pyGroupHeader = "  + Exception Group Traceback (most recent call last):"
	pyGroupPrefix = "  | "
)

// pyFrame matches a frame line, `  File "path", line N, in name`, and the
// location line of a SyntaxError report, which has no ", in name".
var pyFrame = regexp.MustCompile(`^  File "(.*)", line (\d+)(, in .*)?$`)

// pyException matches the line that names the exception: its class, dotted
// when the class lives in a module other than builtins and __main__, and the
// first line of its message.
var pyException = regexp.MustCompile(`^([A-Za-z_][\w.<>]*)(?:: (.*))?$`)

// ParsePythonError turns the stderr of CPython 3.11 running the program file
// mainPath into a structured error, or returns nil when stderr holds no
// traceback nor SyntaxError report. Only the last report counts: it is the
// exception that ended the program, whatever was printed before it,
// including the earlier tracebacks of a chained exception.
//
// Line is that of the innermost frame in mainPath, so an exception raised in
// a library is placed at the call in the program; it is 0 when no frame is
// in mainPath. Column is set only for a syntax error located in mainPath
// (SyntaxError, IndentationError, TabError) whose report has a caret line.
// Python prints the faulty line without its indentation, which stderr does
// not keep, so Column is counted in characters from the line's first
// non-blank character, not from the start of the line.
func ParsePythonError(stderr []byte, mainPath string) *sandbox.ExecError {
	lines := strings.Split(string(stderr), "\n")
	start, body := pyLastReport(lines)
	if start < 0 {
		return nil
	}
	e := &sandbox.ExecError{Traceback: trimReport(lines[start:])}
	// Frame lines, and the source and marker lines below each, are
	// indented; the exception line is the first that is not.
	var frame []string
	var src, caret string
	i := 0
	for ; i < len(body) && strings.HasPrefix(body[i], " "); i++ {
		switch m := pyFrame.FindStringSubmatch(body[i]); {
		case m != nil:
			frame, src, caret = m, "", ""
			if m[1] == mainPath {
				e.Line, _ = strconv.Atoi(m[2])
			}
		case src == "":
			src = body[i]
		case caret == "":
			caret = body[i]
		}
	}
	if i == len(body) {
		return nil
	}
	m := pyException.FindStringSubmatch(body[i])
	if m == nil {
		return nil
	}
	e.Type = m[1]
	e.Message = strings.TrimSpace(strings.Join(append([]string{m[2]}, body[i+1:]...), "\n"))
	if frame != nil && frame[3] == "" && frame[1] == mainPath && strings.Contains(caret, "^") {
		indent := len(src) - len(strings.TrimLeft(src, " "))
		// Python 3.11 places the caret by byte offset in the line.
		e.Column = caretColumn(src[indent:], strings.IndexByte(caret, '^')-indent, utf8.RuneLen)
	}
	return e
}

// pyLastReport finds the last report in lines. It returns the index of its
// first line and the lines to parse: those after the header, without the
// prefix of an exception group, or the whole report of a SyntaxError in the
// program file, which has no header. It returns -1 when there is no report.
func pyLastReport(lines []string) (int, []string) {
	for i := len(lines) - 1; i >= 0; i-- {
		switch lines[i] {
		case pyHeader:
			return i, lines[i+1:]
		case pyGroupHeader:
			var body []string
			for _, l := range lines[i+1:] {
				rest, ok := strings.CutPrefix(l, pyGroupPrefix)
				if !ok {
					break
				}
				body = append(body, rest)
			}
			return i, body
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if m := pyFrame.FindStringSubmatch(lines[i]); m != nil && m[3] == "" {
			return i, lines[i:]
		}
	}
	return -1, nil
}

// caretColumn returns the 1-based column, in characters, of line that a
// caret at offset at points to, when the interpreter counts width(r) units
// for each character r; an offset past the line's end counts one unit per
// column. It returns 0 for a negative offset.
func caretColumn(line string, at int, width func(rune) int) int {
	if at < 0 {
		return 0
	}
	col := 1
	for _, r := range line {
		if at <= 0 {
			break
		}
		at -= width(r)
		col++
	}
	return col + max(at, 0)
}

// trimReport joins the lines of a report, without the blank lines around it.
func trimReport(lines []string) string {
	return strings.TrimRight(strings.TrimLeft(strings.Join(lines, "\n"), "\n"), " \t\n")
}
