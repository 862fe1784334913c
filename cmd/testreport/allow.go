package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// allowed is an entry of the allow list: a test that may skip, for a
// reason its skip message contains, and why it may.
type allowed struct {
	// pkg is the package's import path, or its path in the module
	// ("e2e", "sandbox/linux").
	pkg, test string
	// reason must be part of the skip's message.
	reason string
	// why is the comment above the entry.
	why string
}

// permits reports whether a allows s.
func (a allowed) permits(s skip) bool {
	return (s.Package == a.pkg || strings.HasSuffix(s.Package, "/"+a.pkg)) &&
		s.Test == a.test && strings.Contains(s.Reason, a.reason)
}

// parseAllow reads an allow list. Each entry is one line: the package,
// the test and a part of the skip's message, separated by white space
// (the message's part runs to the end of the line), under a comment (#
// lines) that says why the test may skip. An entry without that comment,
// or without its three fields, is an error naming its line.
func parseAllow(r io.Reader) ([]allowed, error) {
	var out []allowed
	var why []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "":
			why = nil
		case strings.HasPrefix(text, "#"):
			why = append(why, strings.TrimSpace(strings.TrimPrefix(text, "#")))
		default:
			f := strings.Fields(text)
			if len(f) < 3 {
				return nil, fmt.Errorf("line %d: want the package, the test and a part of the skip's message, got %q", n, text)
			}
			if len(why) == 0 {
				return nil, fmt.Errorf("line %d: the entry for %s %s needs a comment above it saying why it may skip", n, f[0], f[1])
			}
			rest := strings.TrimSpace(strings.TrimPrefix(text, f[0]))
			reason := strings.TrimSpace(strings.TrimPrefix(rest, f[1]))
			out = append(out, allowed{pkg: f[0], test: f[1], reason: reason, why: strings.Join(why, " ")})
			why = nil
		}
	}
	return out, sc.Err()
}
