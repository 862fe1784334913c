package eval

import (
	"bytes"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Outcome is how one sample fared.
type Outcome string

// The outcomes of a sample. Only OutcomePassed counts as correct.
const (
	// OutcomePassed: the tests ran to the end and the sentinel was printed.
	OutcomePassed Outcome = "passed"
	// OutcomeFailed: an exception, a failed assertion, or an exit before
	// the tests finished.
	OutcomeFailed Outcome = "failed"
	// OutcomeTimeout: the wall-time limit was reached.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeCPULimit, OutcomeMemoryLimit, OutcomeOutputLimit: a sandbox
	// limit ended the program.
	OutcomeCPULimit    Outcome = "cpu_limit"
	OutcomeMemoryLimit Outcome = "memory_limit"
	OutcomeOutputLimit Outcome = "output_limit"
	// OutcomeKilled: a signal ended the program (it killed itself, crashed).
	OutcomeKilled Outcome = "killed"
	// OutcomeInternal: the platform failed, even after retries; the sample
	// was not judged and the evaluation is incomplete.
	OutcomeInternal Outcome = "internal"
	// OutcomeNotRun: the evaluation was interrupted before the sample ran.
	OutcomeNotRun Outcome = "not_run"
)

// SampleResult is the verdict on one sample.
type SampleResult struct {
	// TaskID names the problem.
	TaskID string `json:"task_id"`
	// Sample is the sample's position in the samples file (0-based).
	Sample int `json:"sample"`
	// Line is the sample's line in the samples file (0 for canonical).
	Line int `json:"line,omitempty"`
	// Passed is true only for OutcomePassed.
	Passed bool `json:"passed"`
	// Outcome says how the sample fared.
	Outcome Outcome `json:"outcome"`
	// Reason explains a failure that has no structured error.
	Reason string `json:"reason,omitempty"`
	// Error is the exception that failed the sample, if any.
	Error *sandbox.ExecError `json:"error,omitempty"`
	// Status and ExitCode are the sandbox's verdict on the program.
	Status   sandbox.Status `json:"status"`
	ExitCode int            `json:"exit_code"`
	// WallMS is the program's run time.
	WallMS float64 `json:"wall_ms"`
}

// judge turns a sandbox Result into the sample's verdict.
func judge(res sandbox.Result, sentinel string) (Outcome, string) {
	switch res.Status {
	case sandbox.StatusOK:
		if bytes.Contains(res.Stdout, []byte(sentinel+"\n")) {
			return OutcomePassed, ""
		}
		return OutcomeFailed, "exited with status 0 before the tests finished"
	case sandbox.StatusError:
		if res.Error == nil {
			return OutcomeFailed, res.Reason
		}
		return OutcomeFailed, ""
	case sandbox.StatusTimeout:
		return OutcomeTimeout, res.Reason
	case sandbox.StatusCPULimit:
		return OutcomeCPULimit, res.Reason
	case sandbox.StatusMemoryLimit:
		return OutcomeMemoryLimit, res.Reason
	case sandbox.StatusOutputLimit:
		return OutcomeOutputLimit, res.Reason
	case sandbox.StatusKilled:
		return OutcomeKilled, res.Reason
	}
	return OutcomeInternal, res.Reason
}
