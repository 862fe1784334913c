package api

import "github.com/crucible-sandbox/crucible/sandbox"

// The types of a swe run's repository and tests (package swe uses them
// under the same names), kept here so that the API's clients depend on
// the API alone.

// RepoFormat is how a repository's bytes are packed.
type RepoFormat string

// The repository formats.
const (
	// RepoTar is a tar archive, optionally gzip-compressed.
	RepoTar RepoFormat = "tar"
	// RepoBundle is a git bundle (git bundle create repo.bundle --all);
	// its HEAD is checked out.
	RepoBundle RepoFormat = "bundle"
)

// Repo is the repository a task works on, as bytes: the agent, the
// verification and the diff all start from these bytes, never from the
// caller's directory.
type Repo struct {
	// Format says how Archive is packed; "" detects it from its first
	// bytes (a git bundle's signature, gzip's magic, else tar).
	Format RepoFormat `json:"format,omitempty"`
	// Archive is the repository.
	Archive []byte `json:"archive"`
}

// TestOutcome is one test's result.
type TestOutcome string

// The outcomes of a test.
const (
	TestPassed  TestOutcome = "passed"
	TestFailed  TestOutcome = "failed" // failed or errored
	TestSkipped TestOutcome = "skipped"
	TestMissing TestOutcome = "missing" // named, but the run did not report it
)

// TestCase is one test and its outcome.
type TestCase struct {
	// ID is pytest's node ID ("tests/test_x.py::test_y[1-2]") or the
	// JUnit report's file::name.
	ID      string      `json:"id"`
	Outcome TestOutcome `json:"outcome"`
}

// TestReport is one run of the tests.
type TestReport struct {
	// Command is what ran, from the repository's root.
	Command string `json:"command"`
	// Status is the sandbox's status (ok, timeout, ...); ExitCode the
	// command's.
	Status   sandbox.Status `json:"status"`
	ExitCode int            `json:"exit_code"`
	// Applied says how the change was applied before the tests ran:
	// "" (no change), "git apply" or "patch --fuzz"; ApplyError why it
	// could not be (the tests then did not run).
	Applied    string `json:"applied,omitempty"`
	ApplyError string `json:"apply_error,omitempty"`
	// Cases are the per-test results, when the command wrote a JUnit
	// report (pytest does); Passed and Failed count them.
	Cases  []TestCase `json:"cases,omitempty"`
	Passed int        `json:"passed"`
	Failed int        `json:"failed"`
	// Output is the command's output, clipped.
	Output     string  `json:"output"`
	DurationMS float64 `json:"duration_ms"`
}
