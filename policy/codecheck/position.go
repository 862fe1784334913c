package codecheck

import (
	"strings"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// finding returns a finding at the byte offset off of code (line and
// column 0 when off is negative), its snippet the line there.
func finding(code string, off int, rule, message string) sandbox.Finding {
	f := sandbox.Finding{Rule: rule, Message: message}
	if off < 0 || off > len(code) {
		return f
	}
	start := strings.LastIndexByte(code[:off], '\n') + 1
	end := strings.IndexByte(code[off:], '\n')
	if end < 0 {
		end = len(code)
	} else {
		end += off
	}
	f.Line = strings.Count(code[:start], "\n") + 1
	f.Column = utf8.RuneCountInString(code[start:off]) + 1
	f.Snippet = strings.TrimSpace(code[start:end])
	return f
}

// lineFinding returns a finding at a 1-based line and column of code.
func lineFinding(code string, line, col int, rule, message string) sandbox.Finding {
	off := 0
	for i := 1; i < line; i++ {
		next := strings.IndexByte(code[off:], '\n')
		if next < 0 {
			return sandbox.Finding{Rule: rule, Message: message, Line: line, Column: col}
		}
		off += next + 1
	}
	f := finding(code, off, rule, message)
	f.Column = col
	return f
}
