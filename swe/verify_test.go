package swe

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	benchtest "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// conftestCheat is a diff that makes every test pass by rewriting its
// report in a conftest.py hook: what verification alone cannot see
// through, which is why testEdits refuses it when tests are named.
const conftestCheat = `diff --git a/conftest.py b/conftest.py
--- a/conftest.py
+++ b/conftest.py
@@ -1,2 +1,11 @@
 import os, sys
 sys.path.insert(0, os.path.dirname(__file__))
+
+import pytest
+
+
+@pytest.hookimpl(hookwrapper=True)
+def pytest_runtest_makereport(item, call):
+    outcome = yield
+    rep = outcome.get_result()
+    rep.outcome = "passed"
`

// moreTests adds a test class and a parameterised test, whose node IDs
// the report must give as pytest does.
const moreTests = `diff --git a/tests/test_more.py b/tests/test_more.py
new file mode 100644
--- /dev/null
+++ b/tests/test_more.py
@@ -0,0 +1,20 @@
+import pytest
+
+
+class TestOuter:
+    class TestInner:
+        def test_deep(self):
+            pass
+
+    def test_method(self):
+        assert False
+
+
+@pytest.mark.parametrize("a,b", [(1, 2), (3, 4)])
+def test_param(a, b):
+    assert a < b
+
+
+@pytest.mark.skip(reason="not today")
+def test_skipped():
+    pass
`

// TestVerify proves verification in a fresh sandbox: the tests before, a
// fix (git apply, and patch --fuzz when git apply refuses), a breaking
// change, a change that does not apply, a conftest that fakes every
// result (verified as passing, so refused by testEdits), pytest's node
// IDs, a JUnit report a hostile run replaced with garbage, and a test
// command past the call timeout; each judged.
func TestVerify(t *testing.T) {
	cfg := wsConfig(t)
	cfg.CallTimeout = 20 * time.Second
	repo := tinyRepoTarGz(t)
	named := []string{"tests/test_calc.py::test_add"}
	before, err := Verify(t.Context(), cfg, Task{Repo: repo, Prompt: "p"}, "")
	if err != nil {
		t.Fatal(err)
	}
	wantBefore := []TestCase{{ID: "tests/test_calc.py::test_add", Outcome: TestFailed}, {ID: "tests/test_calc.py::test_sub", Outcome: TestPassed}}
	if !slices.Equal(before.Cases, wantBefore) || before.Applied != "" || before.Status != sandbox.StatusError || before.ExitCode != 1 || before.Passed != 1 || before.Failed != 1 {
		t.Fatalf("before: %+v, want cases %v, exit 1", before, wantBefore)
	}
	if !strings.Contains(before.Output, "FAILED tests/test_calc.py::test_add") {
		t.Errorf("before's output lacks pytest's summary: %q", before.Output)
	}
	for _, tc := range []struct {
		name      string
		diff      string
		command   string
		tests     []string
		applied   string
		cases     []TestCase
		status    Status
		reason    string
		broken    []string
		refused   bool
		outputHas string
	}{
		{name: "fix", diff: fixDiff, tests: named, applied: "git apply", status: StatusResolved, reason: "all 1 named tests pass",
			cases: []TestCase{{ID: "tests/test_calc.py::test_add", Outcome: TestPassed}, {ID: "tests/test_calc.py::test_sub", Outcome: TestPassed}}},
		{name: "fix, no tests named", diff: fixDiff, applied: "git apply", status: StatusResolved, reason: "all 2 tests the command ran pass",
			cases: []TestCase{{ID: "tests/test_calc.py::test_add", Outcome: TestPassed}, {ID: "tests/test_calc.py::test_sub", Outcome: TestPassed}}},
		{name: "fuzzy fix", diff: fuzzyFixDiff, tests: named, applied: "patch --fuzz", status: StatusResolved,
			cases: []TestCase{{ID: "tests/test_calc.py::test_add", Outcome: TestPassed}, {ID: "tests/test_calc.py::test_sub", Outcome: TestPassed}}},
		{name: "breaks another test", diff: breakDiff, applied: "git apply", status: StatusUnresolved, reason: "1 of 2 tests fail after the change: tests/test_calc.py::test_sub; the command exited 1",
			cases: []TestCase{{ID: "tests/test_calc.py::test_add", Outcome: TestPassed}, {ID: "tests/test_calc.py::test_sub", Outcome: TestFailed}}, broken: []string{"tests/test_calc.py::test_sub"}},
		{name: "does not apply", diff: staleDiff, tests: named, status: StatusUnresolved, reason: "the change does not apply: git apply: error: patch failed: calc.py:1"},
		{name: "conftest fakes the results", diff: conftestCheat, tests: named, applied: "git apply", status: StatusResolved, refused: true,
			cases: []TestCase{{ID: "tests/test_calc.py::test_add", Outcome: TestPassed}, {ID: "tests/test_calc.py::test_sub", Outcome: TestPassed}}},
		{name: "node IDs", diff: moreTests, applied: "git apply", status: StatusUnresolved, cases: []TestCase{
			{ID: "tests/test_calc.py::test_add", Outcome: TestFailed}, {ID: "tests/test_calc.py::test_sub", Outcome: TestPassed},
			{ID: "tests/test_more.py::TestOuter::TestInner::test_deep", Outcome: TestPassed}, {ID: "tests/test_more.py::TestOuter::test_method", Outcome: TestFailed},
			{ID: "tests/test_more.py::test_param[1-2]", Outcome: TestPassed}, {ID: "tests/test_more.py::test_param[3-4]", Outcome: TestPassed},
			{ID: "tests/test_more.py::test_skipped", Outcome: TestSkipped}}},
		{name: "junit garbage", diff: fixDiff, command: defaultTestCommand + `; printf '<testsuite><testcase name="x"' > /tmp/.swe/junit.xml`,
			applied: "git apply", status: StatusResolved, reason: "exited 0 (it wrote no per-test report)", outputHas: "[crucible: the JUnit report is not XML"},
		{name: "junit a link", diff: fixDiff, command: defaultTestCommand + `; ln -sf /dev/zero /tmp/.swe/junit.xml`,
			applied: "git apply", status: StatusResolved, outputHas: "[crucible: the JUnit report could not be opened"},
		{name: "junit too big", diff: fixDiff, command: defaultTestCommand + `; head -c 17000000 /dev/zero > /tmp/.swe/junit.xml`,
			applied: "git apply", status: StatusResolved, outputHas: "[crucible: the JUnit report is larger than"},
		{name: "junit forged, exit failing", diff: breakDiff, command: defaultTestCommand + `; s=$?; echo '<testsuite><testcase file="tests/test_calc.py" classname="tests.test_calc" name="test_sub"/></testsuite>' > /tmp/.swe/junit.xml; exit $s`,
			applied: "git apply", status: StatusUnresolved, reason: "every reported test passes but the command exited 1", cases: []TestCase{{ID: "tests/test_calc.py::test_sub", Outcome: TestPassed}}},
		{name: "timeout", diff: fixDiff, command: "sleep 600", tests: named, applied: "git apply", status: StatusUnresolved, reason: "tests/test_calc.py::test_add (missing); the command timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := Task{Repo: repo, Prompt: "fix add", TestCommand: tc.command, Tests: tc.tests}
			c := cfg
			if tc.name == "timeout" {
				c.CallTimeout = 2 * time.Second
			}
			start := time.Now()
			after, err := Verify(t.Context(), c, task, tc.diff)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "timeout" && (after.Status != sandbox.StatusTimeout || time.Since(start) > 30*time.Second) {
				t.Errorf("timeout: status %s after %v", after.Status, time.Since(start))
			}
			if after.Applied != tc.applied || (tc.applied == "") != (after.ApplyError != "") {
				t.Errorf("applied %q, apply error %q; want applied %q", after.Applied, after.ApplyError, tc.applied)
			}
			if tc.cases != nil && !slices.Equal(after.Cases, tc.cases) {
				t.Errorf("cases %v, want %v", after.Cases, tc.cases)
			}
			if tc.outputHas != "" && (!strings.Contains(after.Output, tc.outputHas) || len(after.Cases) != 0) {
				t.Errorf("output %q lacks %q (cases %v)", after.Output, tc.outputHas, after.Cases)
			}
			status, reason, _, _, broken := judge(task, before, after)
			if status != tc.status || !strings.Contains(reason, tc.reason) || !slices.Equal(broken, tc.broken) {
				t.Errorf("judge: %s %q broken %v, want %s containing %q broken %v", status, reason, broken, tc.status, tc.reason, tc.broken)
			}
			if _, refused := testEdits(tc.diff, tc.tests); refused != tc.refused {
				t.Errorf("testEdits refused %v, want %v", refused, tc.refused)
			}
		})
	}
}

// TestRunTestsInWorkspace proves the agent's run_tests sees the working
// tree as the agent left it, in its own session: failing before the edit,
// passing after.
func TestRunTestsInWorkspace(t *testing.T) {
	cfg := wsConfig(t)
	w, err := openWorkspace(t.Context(), cfg, tinyRepoTarGz(t))
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	r, err := w.runTests(t.Context(), "", 20*time.Second)
	if err != nil || r.Passed != 1 || r.Failed != 1 || r.Command != defaultTestCommand {
		t.Fatalf("before the edit: %+v %v", r, err)
	}
	if err := w.sess.WriteFile(t.Context(), "repo/calc.py", []byte("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")); err != nil {
		t.Fatal(err)
	}
	r, err = w.runTests(t.Context(), "python3 -m pytest -q tests/test_calc.py::test_add", 20*time.Second)
	if err != nil || r.Passed != 1 || r.Failed != 0 || r.Status != sandbox.StatusOK || !slices.Equal(r.Cases, []TestCase{{ID: "tests/test_calc.py::test_add", Outcome: TestPassed}}) {
		t.Fatalf("after the edit: %+v %v", r, err)
	}
	d, err := w.diff(t.Context())
	if err != nil || !strings.Contains(d, "+    return a + b") || strings.Contains(d, "pycache") {
		t.Fatalf("diff: %q %v", d, err)
	}
}

// BenchmarkVerify measures Verify of a fix on the tiny repository (a
// fresh session, the archive unpacked, the diff applied, pytest run and
// its report read, the session closed) against the same tests run bare:
// Debian's python3 -m pytest on the host, in a directory holding the
// fixed repository. Two runtimes: "cold", keeping no session ready, and
// "warm session", keeping one (linux.Options.WarmSessions, as `crucible
// serve --warm-sessions` does), each Verify after an untimed wait for it
// to be ready. Phases of b.N each (package benchtest): Verify (the
// benchmark's loop), then bare; it reports their medians and p99 and the
// ratio of the medians (target: at most 2).
func BenchmarkVerify(b *testing.B) {
	testenv.Root(b)
	img := testenv.Image(b, "datascience")
	python := testenv.Pytest(b)
	repo := tinyRepoTarGz(b)
	task := Task{Repo: repo, Prompt: "fix add", Tests: []string{"tests/test_calc.py::test_add"}}
	fixed := b.TempDir()
	files := map[string]string{}
	for k, v := range tinyRepo {
		files[k] = v
	}
	files["calc.py"] = strings.Replace(files["calc.py"], "a - b", "a + b", 1)
	writeTree(b, fixed, files)
	bare := func() time.Duration {
		cmd := exec.Command(python, "-m", "pytest", "-q", "-p", "no:cacheprovider")
		cmd.Dir = fixed
		cmd.Env = []string{"PYTHONDONTWRITEBYTECODE=1", "PATH=/usr/bin:/bin"}
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err != nil || !strings.Contains(string(out), "2 passed") {
			b.Fatalf("bare pytest: %v %s", err, out)
		}
		return took
	}
	for _, bc := range []struct {
		name string
		warm int
	}{{"cold", 0}, {"warm session", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			rt, err := linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest, WarmSessions: bc.warm})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			cfg := Config{Sandbox: rt}
			verify := func() time.Duration {
				start := time.Now()
				r, err := Verify(b.Context(), cfg, task, fixDiff)
				took := time.Since(start)
				if err != nil || r.Status != sandbox.StatusOK || r.Passed != 2 || r.Applied != "git apply" {
					b.Fatalf("verify: %+v %v", r, err)
				}
				return took
			}
			verified := benchtest.Loop(b, func() { benchtest.AwaitPools(b, rt) }, verify)
			benchtest.AwaitPools(b, rt)
			base := benchtest.Times(len(verified), nil, bare)
			benchtest.Compare(b, verified, "verify", base, "bare", "ratio")
			if bc.warm > 0 && benchtest.PoolHits(rt) == 0 {
				b.Fatal("no Verify was served a warm session")
			}
		})
	}
}
