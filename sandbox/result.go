package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
)

// Status says how a run ended. It is exactly one of the constants below.
type Status string

// The statuses a Result can carry.
const (
	// StatusOK: the program exited with code 0.
	StatusOK Status = "ok"
	// StatusError: the program exited with a non-zero code.
	StatusError Status = "error"
	// StatusTimeout: the wall-time limit was reached and the run was killed.
	StatusTimeout Status = "timeout"
	// StatusCPULimit: the CPU-time limit was reached.
	StatusCPULimit Status = "cpu_limit"
	// StatusMemoryLimit: the memory limit was reached and the kernel's OOM
	// killer ended a process of the run.
	StatusMemoryLimit Status = "memory_limit"
	// StatusOutputLimit: stdout and stderr together reached the output limit;
	// the run was killed and what was read is kept.
	StatusOutputLimit Status = "output_limit"
	// StatusKilled: the program was ended by a signal that no limit explains
	// (it killed itself, crashed, or the caller cancelled the run).
	StatusKilled Status = "killed"
	// StatusBlocked: policy refused to run the code; nothing ran.
	StatusBlocked Status = "blocked"
	// StatusInternal: the platform failed; never the user's code.
	StatusInternal Status = "internal"
)

// Result is what a run produced. Every run that was attempted returns one,
// even when the platform failed (StatusInternal).
type Result struct {
	// Status says how the run ended.
	Status Status `json:"status"`
	// Reason explains a status other than ok or error in a sentence, such as
	// "wall-time limit of 5s reached".
	Reason string `json:"reason,omitempty"`
	// ExitCode is the program's exit code, or -1 when it was ended by a
	// signal or never started.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the program ("SIGKILL"), if any.
	Signal string `json:"signal,omitempty"`
	// Stdout is the program's standard output, up to the output limit.
	Stdout Data `json:"stdout"`
	// Stderr is the program's standard error, up to the output limit.
	Stderr Data `json:"stderr"`
	// StdoutTruncated is set when stdout was cut at the output limit.
	StdoutTruncated bool `json:"stdout_truncated,omitempty"`
	// StderrTruncated is set when stderr was cut at the output limit.
	StderrTruncated bool `json:"stderr_truncated,omitempty"`
	// Error is the structured error of a Python or JavaScript program that
	// failed with an uncaught exception or a syntax error, or of a bash
	// program that failed, or timed out, because a fork was refused
	// (Type "fork": the process limit).
	Error *ExecError `json:"error,omitempty"`
	// Policy is the static code policy the code was checked under; nil
	// when none was (mode off).
	Policy *Policy `json:"policy,omitempty"`
	// Findings are what the policy found: why a run was blocked, or, in
	// warn mode, what the code that ran does that the policy forbids.
	Findings []Finding `json:"findings,omitempty"`
	// Value is the repr of a session cell's last expression, as a notebook
	// shows it; empty when it was None or the cell ended in a statement.
	Value string `json:"value,omitempty"`
	// ValueHTML is the last expression's HTML form, when it has one (a
	// pandas DataFrame's table).
	ValueHTML string `json:"value_html,omitempty"`
	// Displays are what a session cell showed with display(), in order
	// (see Display). A stateless run has none: there display() prints the
	// text form and writes images as artifacts.
	Displays []Display `json:"displays,omitempty"`
	// Artifacts are the files the run created or changed in the working
	// directory, in name order, their contents capped in total by the
	// artifact-bytes limit.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Metrics measure the run.
	Metrics Metrics `json:"metrics"`
	// Language is the language that ran.
	Language Language `json:"language"`
	// CodeHash is the hex SHA-256 of the code.
	CodeHash string `json:"code_hash"`
	// ImageDigest identifies the root filesystem the code ran in.
	ImageDigest string `json:"image_digest,omitempty"`
	// Limits are the limits actually applied, defaults filled in.
	Limits Limits `json:"limits"`
	// Network logs the connections of a run with a network allowlist; nil
	// for a run without network.
	Network *NetworkLog `json:"network,omitempty"`
}

// ExecError is a program's failure as the language reports it.
type ExecError struct {
	// Type is the exception class, such as "NameError" or "TypeError".
	Type string `json:"type"`
	// Message is the exception's message.
	Message string `json:"message"`
	// Line is the 1-based line in the submitted code where the error was
	// raised (the innermost frame in the code), or 0 when unknown.
	Line int `json:"line,omitempty"`
	// Column is the 1-based column, known for syntax errors.
	Column int `json:"column,omitempty"`
	// Traceback is the error report as the interpreter printed it.
	Traceback string `json:"traceback,omitempty"`
	// Hint, when set, says in a sentence or two what the error means in
	// the sandbox and what to do instead: that the network is off by
	// policy, or that a module is not installed in the image and which
	// images have it. The platform writes it from facts it knows (see
	// package hint), never the program; it is empty when no rule applies.
	Hint string `json:"hint,omitempty"`
}

// Artifact is a file a run produced, such as a chart.
type Artifact struct {
	// Name is the path relative to the working directory.
	Name string `json:"name"`
	// MIME is the media type, such as "image/png".
	MIME string `json:"mime"`
	// Size is the content length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the hex SHA-256 of the content. It is empty when the host
	// did not read the file: content omitted from a file that is mostly
	// holes (apparent size above the data written, as ftruncate makes), or
	// once the run's artifact and disk budgets are spent; and when the
	// content is Withheld. A digest given is always of the whole content.
	SHA256 string `json:"sha256"`
	// Content is the file's bytes, unless ContentOmitted.
	Content Data `json:"content,omitempty"`
	// ContentOmitted is set when the content did not fit in the run's
	// artifact-bytes budget, or is Withheld; name and size are still given,
	// the digest as SHA256 says.
	ContentOmitted bool `json:"content_omitted,omitempty"`
	// Withheld, when set, says why the server withholds the content: it is
	// not text and holds a secret that redaction hides (see
	// policy.Redactor.RedactResult).
	Withheld string `json:"withheld,omitempty"`
}

// Metrics measure one run.
type Metrics struct {
	// WallMS is the time from the program's start to its end, in ms.
	WallMS float64 `json:"wall_ms"`
	// CPUMS is the CPU time of all the run's processes, in ms.
	CPUMS float64 `json:"cpu_ms"`
	// PeakMemoryBytes is the highest memory use of the run's processes.
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	// QueueMS is the time the request waited before a sandbox was assigned.
	QueueMS float64 `json:"queue_ms"`
	// StartMS is the time taken to build the sandbox before the program
	// started.
	StartMS float64 `json:"start_ms"`
}

// CodeHash returns the hex SHA-256 of code, as Result.CodeHash holds it.
func CodeHash(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}
