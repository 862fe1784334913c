package store

import (
	"reflect"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/swe"
)

// testSWEAgentRun: a swe run's record (its mode, its outcome: the diff
// and the tests before and after) reads back as it was written, from its
// row and in a listing, with no column of its own: the run's info is
// kept as JSON.
func testSWEAgentRun(t *testing.T, s Store) {
	rec := agentRecord("agr_swe", 0, api.AgentRunStatus(swe.StatusResolved))
	rec.Run.Mode = api.ModeSWE
	report := func(failed int) *swe.TestReport {
		return &swe.TestReport{Command: "python3 -m pytest -q", Status: sandbox.StatusOK, ExitCode: min(failed, 1), Passed: 2 - failed, Failed: failed,
			Cases:  []swe.TestCase{{ID: "test_calc.py::test_add", Outcome: map[bool]swe.TestOutcome{true: swe.TestFailed, false: swe.TestPassed}[failed > 0]}},
			Output: "1 failed, 1 passed", DurationMS: 120.5}
	}
	after := report(0)
	after.Applied = "git apply"
	rec.Run.SWE = &api.SWEOutcome{Diff: "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-    return a - b\n+    return a + b\n",
		Before: report(1), After: after, FailToPass: []string{"test_calc.py::test_add"}, PassToPass: []string{"test_calc.py::test_mul"}, Submitted: true}
	mustSaveAgentRun(t, s, "acme", rec)
	got, err := s.GetAgentRun(ctx, "acme", "agr_swe")
	if err != nil {
		t.Fatal(err)
	}
	if got.Run.Mode != api.ModeSWE || !reflect.DeepEqual(got.Run.SWE, rec.Run.SWE) {
		t.Errorf("GetAgentRun: mode %q, outcome %+v\nwant %+v", got.Run.Mode, got.Run.SWE, rec.Run.SWE)
	}
	list, _, err := s.ListAgentRuns(ctx, "acme", AgentRunFilter{})
	if err != nil || len(list) != 1 || list[0].Mode != api.ModeSWE || !reflect.DeepEqual(list[0].SWE, rec.Run.SWE) {
		t.Errorf("ListAgentRuns = %+v, %v; want the swe run with its outcome", list, err)
	}
}
