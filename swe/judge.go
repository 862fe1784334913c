package swe

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// judge gives the verdict of a change from the tests before (on the
// pristine repository; nil if they did not run) and after (the change
// applied in a fresh sandbox: Verify's report; nil if nothing was
// verified). It is resolved only if the change applied, the tests ran,
// and every named test passed, or, with none named, every test the
// command reported passed and the command exited 0 (a command that writes
// no JUnit report is judged by its exit status alone). A named test is a
// node ID or a file: it matches the cases it names (a function matches
// its parameterisations); one no case matches is missing, which fails; a
// skipped named test does not pass.
//
// failToPass, passToPass and broken compare before and after over the
// named tests (else every test either run reported): failed or missing
// before and passing after; passing both times; passing before and not
// after. They are empty when after reported no cases at all (a command
// without a JUnit report): a missing report says nothing of each test.
func judge(task Task, before, after *TestReport) (status Status, reason string, failToPass, passToPass, broken []string) {
	if after == nil {
		return StatusUnresolved, "the change was not verified", nil, nil, nil
	}
	if after.ApplyError != "" {
		return StatusUnresolved, "the change does not apply: " + after.ApplyError, nil, nil, nil
	}
	ids := task.Tests
	if len(ids) == 0 {
		ids = caseIDs(before, after)
	}
	if len(after.Cases) == 0 {
		ids = nil // no per-test report after: nothing to compare
	}
	for _, id := range ids {
		was, now := outcomeOf(before, id), outcomeOf(after, id)
		switch {
		case was != TestPassed && now == TestPassed:
			failToPass = append(failToPass, id)
		case was == TestPassed && now == TestPassed:
			passToPass = append(passToPass, id)
		case was == TestPassed:
			broken = append(broken, id)
		}
	}
	ran := describeRun(after)
	if len(task.Tests) > 0 {
		var failing []string
		for _, id := range task.Tests {
			if o := outcomeOf(after, id); o != TestPassed {
				failing = append(failing, id+" ("+string(o)+")")
			}
		}
		if len(failing) > 0 {
			return StatusUnresolved, fmt.Sprintf("%d of %d named tests fail after the change: %s%s", len(failing), len(task.Tests), listSome(failing), ran), failToPass, passToPass, broken
		}
		return StatusResolved, fmt.Sprintf("all %d named tests pass after the change", len(task.Tests)), failToPass, passToPass, broken
	}
	if len(after.Cases) == 0 {
		if after.Status == sandbox.StatusOK {
			return StatusResolved, "the test command exited 0 (it wrote no per-test report)", failToPass, passToPass, broken
		}
		return StatusUnresolved, fmt.Sprintf("%s and reported no test cases", strings.TrimPrefix(ran, "; ")), failToPass, passToPass, broken
	}
	var failing []string
	for _, c := range after.Cases {
		if c.Outcome == TestFailed {
			failing = append(failing, c.ID)
		}
	}
	switch {
	case len(failing) > 0:
		return StatusUnresolved, fmt.Sprintf("%d of %d tests fail after the change: %s%s", len(failing), len(after.Cases), listSome(failing), ran), failToPass, passToPass, broken
	case after.Status != sandbox.StatusOK:
		return StatusUnresolved, fmt.Sprintf("every reported test passes but %s", strings.TrimPrefix(ran, "; ")), failToPass, passToPass, broken
	}
	return StatusResolved, fmt.Sprintf("all %d tests the command ran pass after the change", len(after.Cases)), failToPass, passToPass, broken
}

// describeRun says how the run ended when that explains a failure ("; the
// command timed out"), else "".
func describeRun(r *TestReport) string {
	switch r.Status {
	case sandbox.StatusOK:
		return ""
	case sandbox.StatusTimeout:
		return "; the command timed out"
	}
	return fmt.Sprintf("; the command exited %d", r.ExitCode)
}

// caseIDs are the IDs of every case of the reports, in order, once each.
func caseIDs(reports ...*TestReport) []string {
	var ids []string
	seen := map[string]bool{}
	for _, r := range reports {
		if r == nil {
			continue
		}
		for _, c := range r.Cases {
			if !seen[c.ID] {
				seen[c.ID] = true
				ids = append(ids, c.ID)
			}
		}
	}
	return ids
}

// outcomeOf is a named test's outcome in r: failed if any case it names
// failed, else passed if any passed (a file whose cases pass but one the
// test itself skips passes, as pytest says), else skipped; TestMissing
// if it names none (or r is nil). A name matches a case of that ID, the cases inside it
// (name + "::..."), its parameterisations (name + "[...") and, for a
// directory, the cases of its files (name + "/...").
func outcomeOf(r *TestReport, name string) TestOutcome {
	if r == nil {
		return TestMissing
	}
	rank := map[TestOutcome]int{TestSkipped: 1, TestPassed: 2, TestFailed: 3}
	out := TestMissing
	for _, c := range r.Cases {
		if c.ID == name || strings.HasPrefix(c.ID, name+"::") || strings.HasPrefix(c.ID, name+"[") || strings.HasPrefix(c.ID, name+"/") {
			if out == TestMissing || rank[c.Outcome] > rank[out] {
				out = c.Outcome
			}
		}
	}
	return out
}

// listSome lists the first few names, saying how many more there are.
func listSome(names []string) string {
	const some = 5
	if len(names) <= some {
		return strings.Join(names, ", ")
	}
	return strings.Join(slices.Clip(names[:some]), ", ") + fmt.Sprintf(" and %d more", len(names)-some)
}
