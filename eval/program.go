package eval

import (
	"crypto/rand"
	"encoding/hex"
)

// newSentinel returns a fresh random marker for one run. It is made after
// the sample was written, so a sample cannot carry it; a sample that reads
// its own program text could still find it (see the package doc).
func newSentinel() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "CRUCIBLE-EVAL-PASSED-" + hex.EncodeToString(b)
}

// testGuard stands between the sample and the tests. A decorator must be
// followed by a definition, so a sample ending in a dangling decorator
// ("@lambda f: (lambda c: None)"), which would turn the tests' check into
// a no-op, becomes a syntax error instead of a pass.
const testGuard = "pass  # crucible: the tests follow"

// Program builds the checked program for a sample: the prompt and
// completion (or the whole solution), a guard line, the problem's tests,
// the call of check on the entry point, and the sentinel print that
// proves check returned.
func Program(p Problem, s Sample, sentinel string) string {
	body := p.Prompt + s.Completion
	if s.Solution != "" {
		body = s.Solution
	}
	return body + "\n" + testGuard + "\n" + p.Test + "\n" + "check(" + p.EntryPoint + ")\n" +
		"print(" + quote(sentinel) + ", flush=True)\n"
}

// quote makes a Python string literal of a sentinel (hex and dashes only).
func quote(s string) string { return "'" + s + "'" }
