package lang

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// jsTrailer starts the line Node.js prints last when an uncaught exception
// ends the program: "Node.js v20.20.2".
const jsTrailer = "Node.js v"

// jsHeader matches the first line of the excerpt Node.js prints where the
// exception was thrown, `file:line`; the source line and a caret line follow.
var jsHeader = regexp.MustCompile(`^(\S+):(\d+)$`)

// jsErrorLine matches the first line of an Error's report: the constructor's
// name, the error's name in brackets when it differs, and the message.
var jsErrorLine = regexp.MustCompile(`^([A-Za-z_$][\w$.]*)(?: \[[^\]]*\])?(?:: (.*))?$`)

// ParseJavaScriptError turns the stderr of Node.js (v18 to v22) running the
// program file mainPath into a structured error, or returns nil when stderr
// holds no uncaught exception report, which Node.js ends with its version
// line. Unhandled promise rejections are reported the same way.
//
// Type is the class of the thrown Error ("MyErr" for a class extending
// Error). A thrown value that is not an Error (throw "boom") has no class
// nor stack: Type is "Error" and Message is the value as Node.js printed it.
//
// Line and Column are those of the innermost stack frame in mainPath. When
// the stack has none, as for syntax errors and thrown non-Error values, they
// are those of the excerpt Node.js printed, if it is of mainPath: its line,
// and the column, in characters, that its caret points to. Traceback is the
// report without the version line.
func ParseJavaScriptError(stderr []byte, mainPath string) *sandbox.ExecError {
	lines := strings.Split(string(stderr), "\n")
	end := len(lines) - 1
	for end >= 0 && !strings.HasPrefix(lines[end], jsTrailer) {
		end--
	}
	if end < 0 {
		return nil
	}
	lines = lines[:end]
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	hdr := jsLastHeader(lines)
	var start int
	var body []string
	if hdr >= 0 {
		start, body = hdr, lines[hdr+3:]
	} else {
		// Without an excerpt, the report is the last paragraph.
		for start = len(lines); start > 0 && lines[start-1] != ""; start-- {
		}
		body = lines[start:]
	}
	e := &sandbox.ExecError{Traceback: trimReport(lines[start:])}
	// A thrown value that is not an Error follows the caret directly, and
	// is mostly followed by a hint to use --trace-uncaught.
	thrown := hdr >= 0 && len(body) > 0 && body[0] != ""
	if n := len(body) - 1; n >= 0 && strings.Contains(body[n], "--trace-uncaught") {
		thrown, body = true, body[:n]
	}
	if thrown {
		e.Type, e.Message = "Error", strings.TrimSpace(strings.Join(body, "\n"))
	} else {
		report := strings.TrimSpace(strings.Join(body, "\n"))
		if report == "" {
			return nil
		}
		jsParseError(e, strings.Split(report, "\n"), mainPath)
	}
	if e.Line == 0 && hdr >= 0 {
		m := jsHeader.FindStringSubmatch(lines[hdr])
		if strings.TrimPrefix(m[1], "file://") == mainPath {
			e.Line, _ = strconv.Atoi(m[2])
			e.Column = caretColumn(lines[hdr+1], strings.IndexByte(lines[hdr+2], '^'), utf16Len)
		}
	}
	return e
}

// jsParseError fills e from the report of an Error: its first line, more
// lines of message, the stack ("    at ..." lines), then any properties.
func jsParseError(e *sandbox.ExecError, report []string, mainPath string) {
	stack := len(report)
	for i, l := range report {
		if strings.HasPrefix(l, "    at ") {
			stack = i
			break
		}
	}
	msg := report[:stack]
	if rest, ok := strings.CutPrefix(msg[0], "["); ok {
		// An Error without stack frames prints as "[Type: message]",
		// then its properties, if any.
		if i := strings.LastIndexByte(rest, ']'); i >= 0 {
			rest = rest[:i]
		}
		msg = []string{rest}
	}
	if m := jsErrorLine.FindStringSubmatch(msg[0]); m != nil {
		e.Type, e.Message = m[1], strings.TrimSpace(strings.Join(append([]string{m[2]}, msg[1:]...), "\n"))
	} else {
		e.Type, e.Message = "Error", strings.Join(msg, "\n")
	}
	frame := regexp.MustCompile(`(?:^|[\s(])(?:file://)?` + regexp.QuoteMeta(mainPath) + `:(\d+):(\d+)`)
	// The stack ends at the first line indented less, such as a property.
	for _, l := range report[stack:] {
		if !strings.HasPrefix(l, "    ") {
			break
		}
		if m := frame.FindStringSubmatch(l); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Column, _ = strconv.Atoi(m[2])
			return
		}
	}
}

// jsLastHeader returns the index of the last excerpt header in lines, one
// followed by a source line and a caret line, or -1.
func jsLastHeader(lines []string) int {
	for i := len(lines) - 3; i >= 0; i-- {
		caret := lines[i+2]
		if jsHeader.MatchString(lines[i]) && strings.Contains(caret, "^") && strings.Trim(caret, " \t^") == "" {
			return i
		}
	}
	return -1
}

// utf16Len is the number of UTF-16 code units of r: the unit of the
// columns of Node.js.
func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}
