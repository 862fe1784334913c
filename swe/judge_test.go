package swe

import (
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// report is a TestReport of cases "id=outcome", the status from exit.
func report(exit int, cases ...string) *TestReport {
	r := &TestReport{ExitCode: exit, Status: sandbox.StatusOK}
	if exit != 0 {
		r.Status = sandbox.StatusError
	}
	for _, c := range cases {
		id, o, _ := strings.Cut(c, "=")
		r.Cases = append(r.Cases, TestCase{ID: id, Outcome: TestOutcome(o)})
	}
	return r
}

// TestJudge proves the verdict and its reason for each way a change can
// end, and the comparison of before and after.
func TestJudge(t *testing.T) {
	before := report(1, "t.py::test_a=failed", "t.py::test_b=passed", "t.py::test_c[1]=passed", "t.py::test_c[2]=passed")
	for _, tc := range []struct {
		name          string
		tests         []string
		after         *TestReport
		status        Status
		reason        string
		f2p, p2p, brk []string
	}{
		{"not verified", nil, nil, StatusUnresolved, "not verified", nil, nil, nil},
		{"does not apply", []string{"t.py::test_a"}, &TestReport{ApplyError: "git apply: patch does not apply"}, StatusUnresolved, "the change does not apply: git apply", nil, nil, nil},
		{"named fixed", []string{"t.py::test_a"}, report(0, "t.py::test_a=passed", "t.py::test_b=passed"), StatusResolved, "all 1 named tests pass", []string{"t.py::test_a"}, nil, nil},
		{"named fixed, another broken", []string{"t.py::test_a"}, report(1, "t.py::test_a=passed", "t.py::test_b=failed"), StatusResolved, "all 1 named tests pass", []string{"t.py::test_a"}, nil, nil},
		{"named still failing", []string{"t.py::test_a", "t.py::test_b"}, report(1, "t.py::test_a=failed", "t.py::test_b=passed"), StatusUnresolved, "1 of 2 named tests fail after the change: t.py::test_a (failed); the command exited 1", nil, []string{"t.py::test_b"}, nil},
		{"named missing", []string{"t.py::test_a"}, report(0, "t.py::test_b=passed"), StatusUnresolved, "t.py::test_a (missing)", nil, nil, nil},
		{"named skipped", []string{"t.py::test_a"}, report(0, "t.py::test_a=skipped"), StatusUnresolved, "t.py::test_a (skipped)", nil, nil, nil},
		{"named file with a skipped case", []string{"t.py"}, report(0, "t.py::test_a=passed", "t.py::test_b=skipped"), StatusResolved, "all 1 named tests pass", []string{"t.py"}, nil, nil},
		{"named file", []string{"t.py"}, report(1, "t.py::test_a=passed", "t.py::test_b=failed"), StatusUnresolved, "1 of 1 named tests fail", nil, nil, nil},
		{"named file fixed", []string{"t.py"}, report(0, "t.py::test_a=passed", "t.py::test_b=passed"), StatusResolved, "all 1 named tests pass", []string{"t.py"}, nil, nil},
		{"named directory", []string{"sub"}, report(1, "sub/t.py::test_x=passed", "sub/u.py::test_y=failed", "subway.py::test_z=passed"), StatusUnresolved, "sub (failed)", nil, nil, nil},
		{"named directory passing", []string{"sub"}, report(1, "sub/t.py::test_x=passed", "subway.py::test_z=failed"), StatusResolved, "all 1 named tests pass", []string{"sub"}, nil, nil},
		{"named parameterised", []string{"t.py::test_c"}, report(1, "t.py::test_c[1]=passed", "t.py::test_c[2]=failed"), StatusUnresolved, "t.py::test_c (failed)", nil, nil, []string{"t.py::test_c"}},
		{"named timed out", []string{"t.py::test_a", "t.py::test_b"}, &TestReport{Status: sandbox.StatusTimeout, ExitCode: -9}, StatusUnresolved, "2 of 2 named tests fail after the change: t.py::test_a (missing), t.py::test_b (missing); the command timed out", nil, nil, nil},
		{"named, one missing", []string{"t.py::test_a", "t.py::test_b"}, report(1, "t.py::test_a=passed"), StatusUnresolved, "t.py::test_b (missing)", []string{"t.py::test_a"}, nil, []string{"t.py::test_b"}},
		{"all pass", nil, report(0, "t.py::test_a=passed", "t.py::test_b=passed", "t.py::test_c[1]=passed", "t.py::test_c[2]=skipped"), StatusResolved, "all 4 tests the command ran pass",
			[]string{"t.py::test_a"}, []string{"t.py::test_b", "t.py::test_c[1]"}, []string{"t.py::test_c[2]"}},
		{"one broken", nil, report(1, "t.py::test_a=passed", "t.py::test_b=failed"), StatusUnresolved, "1 of 2 tests fail after the change: t.py::test_b; the command exited 1",
			[]string{"t.py::test_a"}, nil, []string{"t.py::test_b", "t.py::test_c[1]", "t.py::test_c[2]"}},
		{"clean report, failing exit", nil, report(3, "t.py::test_a=passed"), StatusUnresolved, "every reported test passes but the command exited 3", []string{"t.py::test_a"}, nil, []string{"t.py::test_b", "t.py::test_c[1]", "t.py::test_c[2]"}},
		{"no cases, exit 1", nil, report(1), StatusUnresolved, "the command exited 1 and reported no test cases", nil, nil, nil},
		{"no cases, exit 0", nil, report(0), StatusResolved, "exited 0 (it wrote no per-test report)", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, reason, f2p, p2p, brk := judge(Task{Tests: tc.tests}, before, tc.after)
			if status != tc.status || !strings.Contains(reason, tc.reason) {
				t.Errorf("judge: %s %q, want %s containing %q", status, reason, tc.status, tc.reason)
			}
			if !slices.Equal(f2p, tc.f2p) || !slices.Equal(p2p, tc.p2p) || !slices.Equal(brk, tc.brk) {
				t.Errorf("fail to pass %v, pass to pass %v, broken %v; want %v, %v, %v", f2p, p2p, brk, tc.f2p, tc.p2p, tc.brk)
			}
		})
	}
}

// TestTestEdits proves which files of a diff are tests and when the
// change is refused.
func TestTestEdits(t *testing.T) {
	diffOf := func(paths ...string) string {
		var b strings.Builder
		for _, p := range paths {
			b.WriteString("diff --git a/" + p + " b/" + p + "\n--- a/" + p + "\n+++ b/" + p + "\n@@ -1 +1 @@\n-x\n+y\n")
		}
		return b.String()
	}
	named := []string{"tests/unit/test_calc.py::test_add"}
	for _, tc := range []struct {
		name    string
		diff    string
		named   []string
		edited  []string
		refused bool
	}{
		{"source only", diffOf("calc.py", "pkg/util.py"), named, nil, false},
		{"named test file", diffOf("calc.py", "tests/unit/test_calc.py"), named, []string{"tests/unit/test_calc.py"}, true},
		{"other test file", diffOf("tests/unit/test_other.py"), named, []string{"tests/unit/test_other.py"}, false},
		{"root conftest", diffOf("conftest.py"), named, []string{"conftest.py"}, true},
		{"conftest on the path", diffOf("tests/conftest.py"), named, []string{"tests/conftest.py"}, true},
		{"conftest elsewhere", diffOf("other/conftest.py"), named, []string{"other/conftest.py"}, false},
		{"pytest.ini", diffOf("pytest.ini"), named, []string{"pytest.ini"}, true},
		{"pyproject", diffOf("pyproject.toml"), named, []string{"pyproject.toml"}, true},
		{"nested tox.ini elsewhere", diffOf("docs/tox.ini"), named, []string{"docs/tox.ini"}, false},
		{"suffix test", diffOf("pkg/calc_test.py"), named, []string{"pkg/calc_test.py"}, false},
		{"test dir", diffOf("test/data.json"), named, []string{"test/data.json"}, false},
		{"named file not matching patterns", diffOf("checks/verify.py"), []string{"checks/verify.py::test_ok"}, []string{"checks/verify.py"}, true},
		{"nothing named: reported, never refused", diffOf("conftest.py", "tests/unit/test_calc.py"), nil, []string{"conftest.py", "tests/unit/test_calc.py"}, false},
		{"renamed away", "diff --git a/tests/unit/test_calc.py b/gone.py\nsimilarity index 100%\nrename from tests/unit/test_calc.py\nrename to gone.py\n", named, []string{"tests/unit/test_calc.py"}, true},
		{"other prefix, patch -p1", "--- x/conftest.py\n+++ y/conftest.py\n@@ -1 +1 @@\n-a\n+b\n", named, []string{"conftest.py"}, true},
		{"hunk line is no header", "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n--- a/conftest.py\n+++ b/conftest.py\n", named, nil, false},
		{"file in a named directory", diffOf("checks/data.json", "checksum.py"), []string{"checks"}, []string{"checks/data.json"}, true},
		{"deleted named test", "diff --git a/tests/unit/test_calc.py b/tests/unit/test_calc.py\ndeleted file mode 100644\n--- a/tests/unit/test_calc.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", named, []string{"tests/unit/test_calc.py"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited, refused := testEdits(tc.diff, tc.named)
			if !slices.Equal(edited, tc.edited) || refused != tc.refused {
				t.Fatalf("testEdits: %v refused %v, want %v refused %v", edited, refused, tc.edited, tc.refused)
			}
		})
	}
}
