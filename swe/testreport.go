package swe

import (
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// testAnswer is what the platform's cell answers about a test run (and,
// in a verification, about applying the change).
type testAnswer struct {
	Exit       int         `json:"exit"`
	TimedOut   bool        `json:"timed_out"`
	Output     string      `json:"output"`
	Cases      [][2]string `json:"cases"`
	JUnit      string      `json:"junit"`
	Applied    string      `json:"applied"`
	ApplyError string      `json:"apply_error"`
}

// report turns the answer into a TestReport. A case whose outcome is not
// one the cell writes (the report came from a hostile run's file only
// through the cell's parser, but the answer is decoded defensively all
// the same) counts as failed.
func (a testAnswer) report(command string, took time.Duration) *TestReport {
	r := &TestReport{Command: command, ExitCode: a.Exit, Applied: a.Applied, ApplyError: a.ApplyError,
		Output: a.Output, DurationMS: float64(took.Microseconds()) / 1000}
	switch {
	case a.ApplyError != "":
		r.Status, r.ExitCode = sandbox.StatusError, -1
		return r
	case a.TimedOut:
		r.Status = sandbox.StatusTimeout
	case a.Exit == 0:
		r.Status = sandbox.StatusOK
	default:
		r.Status = sandbox.StatusError
	}
	if a.JUnit != "" {
		r.Output += "\n[crucible: " + a.JUnit + "]"
	}
	for _, c := range a.Cases {
		o := TestOutcome(c[1])
		switch o {
		case TestPassed:
			r.Passed++
		case TestSkipped:
		default:
			o = TestFailed
			r.Failed++
		}
		r.Cases = append(r.Cases, TestCase{ID: c[0], Outcome: o})
	}
	return r
}
