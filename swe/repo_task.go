package swe

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Size rules of a task's test command and named tests.
const (
	// maxTestCommandBytes caps the test command.
	maxTestCommandBytes = 16 << 10
	// maxTestIDBytes caps one named test's ID.
	maxTestIDBytes = 1024
)

// Validate checks a task before anything runs: the repository (see
// Repo.validate), the prompt, the test command and the named tests, each
// failure an *sandbox.InputError naming the field ("task", "repo.archive",
// "repo.format", "test_command", "tests[i]") and the rule.
//
// A named test is a relative path inside the repository, optionally
// followed by "::" and pytest's rest of a node ID (a class, a function,
// parameters): it becomes part of a shell command line only quoted, and
// its path decides which edits are refused, so the path must be clean (no
// "..", not absolute) for that decision to mean what it says.
func (t Task) Validate() error {
	if err := validateRepo(t.Repo); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(t.Prompt) == "":
		return &sandbox.InputError{Field: "task", Rule: "is required: what the agent is to do, in plain language"}
	case len(t.Prompt) > MaxTaskBytes:
		return &sandbox.InputError{Field: "task", Rule: fmt.Sprintf("must be at most %d bytes, got %d", MaxTaskBytes, len(t.Prompt))}
	case !utf8.ValidString(t.Prompt) || strings.ContainsRune(t.Prompt, 0):
		return &sandbox.InputError{Field: "task", Rule: "must be UTF-8 text without NUL bytes"}
	case len(t.TestCommand) > maxTestCommandBytes:
		return &sandbox.InputError{Field: "test_command", Rule: fmt.Sprintf("must be at most %d bytes, got %d", maxTestCommandBytes, len(t.TestCommand))}
	case !utf8.ValidString(t.TestCommand) || strings.ContainsRune(t.TestCommand, 0):
		return &sandbox.InputError{Field: "test_command", Rule: "must be UTF-8 text without NUL bytes"}
	case len(t.Tests) > MaxTests:
		return &sandbox.InputError{Field: "tests", Rule: fmt.Sprintf("must name at most %d tests, got %d", MaxTests, len(t.Tests))}
	}
	for i, id := range t.Tests {
		if rule := testIDRule(id); rule != "" {
			return &sandbox.InputError{Field: fmt.Sprintf("tests[%d]", i), Rule: rule}
		}
	}
	return nil
}

// testIDRule says what is wrong with a named test's ID, or "".
func testIDRule(id string) string {
	file := testFile(id)
	switch {
	case file == "":
		return "must be a test file's path relative to the repository's root, optionally followed by ::name (a pytest node ID), got an empty path"
	case len(id) > maxTestIDBytes:
		return fmt.Sprintf("must be at most %d bytes, got %d", maxTestIDBytes, len(id))
	case !utf8.ValidString(id) || strings.ContainsAny(id, "\x00\n\r"):
		return "must be UTF-8 on one line, without NUL bytes"
	case strings.HasPrefix(file, "/"):
		return fmt.Sprintf("must be a path relative to the repository's root, got the absolute %q", file)
	case path.Clean(file) != file || file == ".." || strings.HasPrefix(file, "../"):
		return fmt.Sprintf("must be a clean path inside the repository (no \"..\", \".\" or \"//\" elements), got %q", file)
	}
	return ""
}

// testFile is the file part of a test ID: what precedes its first "::".
func testFile(id string) string {
	file, _, _ := strings.Cut(id, "::")
	return file
}
