package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/store"
	"github.com/crucible-sandbox/crucible/swe"
)

// bugRepo writes a tiny Python repository with a bug (add subtracts) and
// its pytest tests, one failing because of the bug and one passing, and
// returns its directory.
func bugRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	files := map[string]string{
		"calc.py":      "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n",
		"test_calc.py": "from calc import add, neg\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_neg():\n    assert neg(4) == -4\n",
		"README.md":    "calc: adds numbers\n",
	}
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	return dir
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// treeHash hashes a directory's tree: every path, its mode and its
// content (a symlink's target), in order.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00", rel, info.Mode(), info.ModTime().UnixNano())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			h.Write([]byte(target))
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// crucibleCmd is this test binary as crucible with args.
func crucibleCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	return cmd
}

// exitOf is a finished command's exit code.
func exitOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestSWEResolves: `crucible swe` on a directory with a bug and a failing
// pytest test, with a scripted model (a local server speaking the OpenAI
// wire format) that greps the file with bash, views it, fixes the line,
// runs the tests and submits: the run is resolved (exit 0), the output shows the tests before
// and after and the diff, the patch --out wrote applies with the real git
// apply to a copy of the repository and makes its tests pass on the host,
// and the user's directory is unchanged. Needs root, the data-science
// image (git, pytest) and the host's pytest.
func TestSWEResolves(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	python := testenv.Pytest(t)
	repo := bugRepo(t)
	before := treeHash(t, repo)
	calls := append([]sweCall{{"bash", map[string]any{"command": "grep -n return calc.py"}}}, fixerCalls("calc.py", "return a - b", "return a + b")...)
	model := scriptedSWEModel(t, "", calls)
	out := t.TempDir()
	patch := filepath.Join(out, "fix.patch")
	cmd := crucibleCmd("swe", "--provider", "openai", "--base-url", model.URL+"/v1", "--api-key", "test", "--model", "scripted",
		"--db", filepath.Join(out, "runs.db"), "--out", patch, "--test", "test_calc.py::test_add",
		repo, "fix the failing test in test_calc.py")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("crucible swe: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"status: resolved",
		"tests before: 1 passed, 1 failed",
		"tests after: 2 passed, 0 failed",
		"fail_to_pass: test_calc.py::test_add",
		"-    return a - b\n",
		"+    return a + b\n",
		"submitted true",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	// Progress: each step, the command and its output as it ran.
	for _, want := range []string{"swe: step 1 · tool: bash: grep -n return calc.py\n2:    return a - b\n", "edit: str_replace calc.py", "the change is in " + patch} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if after := treeHash(t, repo); after != before {
		t.Errorf("the user's directory changed: tree hash %s, was %s", after, before)
	}

	// The patch, applied by the real git apply to a copy, makes the tests pass here.
	cp := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", repo, cp).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	pytest := func() error {
		c := exec.Command(python, "-m", "pytest", "-q", "-p", "no:cacheprovider")
		c.Dir = cp
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
		return nil
	}
	if pytest() == nil {
		t.Fatal("the copy's tests pass before the patch: the repository has no bug")
	}
	apply := exec.Command("git", "apply", patch)
	apply.Dir = cp
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply %s: %v\n%s", patch, err, out)
	}
	if err := pytest(); err != nil {
		t.Errorf("the tests fail with the patch applied: %v", err)
	}
}

// TestSWEJSON: --json prints the whole result, its trace with the tool
// calls; the run and the commands the agent ran are recorded in --db,
// under the result's ID (a crucible serve on that store lists it). Needs root and the data-science image.
func TestSWEJSON(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	model := scriptedSWEModel(t, "", fixerCalls("calc.py", "return a - b", "return a + b"))
	db := filepath.Join(t.TempDir(), "runs.db")
	cmd := crucibleCmd("swe", "--provider", "openai", "--base-url", model.URL+"/v1", "--api-key", "test", "--model", "scripted",
		"--db", db, "--json", bugRepo(t), "fix the failing test")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crucible swe --json: %v\n%s", err, out)
	}
	var res swe.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the output is not a swe.Result: %v\n%s", err, out)
	}
	tools := map[string]bool{}
	for _, s := range res.Trace.Steps {
		tools[s.Tool] = true
	}
	if res.Status != swe.StatusResolved || !strings.Contains(res.Diff, "+    return a + b") || !tools["view"] || !tools["edit"] || res.After == nil {
		t.Errorf("result: status %s, tools %v, after %v, diff:\n%s", res.Status, tools, res.After, res.Diff)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, _, err := st.List(context.Background(), server.DefaultTenant, store.Filter{AgentRun: res.ID})
	if err != nil || len(runs) == 0 {
		t.Errorf("the run store holds no execution of agent run %s: %v", res.ID, err)
	}
	if rec, err := st.GetAgentRun(context.Background(), server.DefaultTenant, res.ID); err != nil || rec.Run.Mode != api.ModeSWE || rec.Run.Status != "resolved" {
		t.Errorf("the run store's agent run %s: %+v, %v", res.ID, rec, err)
	}
}

// TestSWEBadInput: bad arguments and flags are refused with a message
// naming the argument or flag, exit 2, before anything runs (no run store
// is even created). Needs nothing: no sandbox starts.
func TestSWEBadInput(t *testing.T) {
	repo := bugRepo(t)
	existing := filepath.Join(t.TempDir(), "exists.patch")
	writeFile(t, existing, "")
	zip := filepath.Join(t.TempDir(), "repo.zip")
	writeFile(t, zip, "PK")
	emptyTar := filepath.Join(t.TempDir(), "repo.tar")
	writeFile(t, emptyTar, "")
	model := []string{"--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "test", "--model", "scripted"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing dir", []string{"/nonexistent/repo", "fix it"}, `REPO "/nonexistent/repo": no such file or directory`},
		{"empty task", []string{repo, "  \n"}, "TASK: empty"},
		{"task only", []string{repo}, "accepts 2 arg(s)"},
		{"test outside", []string{"--test", "../x.py", repo, "fix it"}, `--test "../x.py": its file must be a path inside the repository`},
		{"test absolute", []string{"--test", "/etc/passwd", repo, "fix it"}, `--test "/etc/passwd": its file must be a path inside the repository`},
		{"test empty", []string{"--test", "", repo, "fix it"}, `--test "": empty`},
		{"test not there", []string{"--test", "test_nope.py::test_x", repo, "fix it"}, `--test "test_nope.py::test_x": the repository ` + repo + " has no test_nope.py"},
		{"test control", []string{"--test", "test_calc.py::a\x1bb", repo, "fix it"}, "holds a control character"},
		{"zip", []string{zip, "fix it"}, "not a directory, a git bundle (.bundle) or a tarball"},
		{"empty tar", []string{emptyTar, "fix it"}, "repo.tar\": empty"},
		{"max steps", []string{"--max-steps", "0", repo, "fix it"}, "--max-steps 0: must be at least 1"},
		{"test cmd lines", []string{"--test-cmd", "pytest\nrm -rf /", repo, "fix it"}, "--test-cmd: must be one line"},
		{"out exists", []string{"--out", existing, repo, "fix it"}, "--out " + existing + ": exists"},
		{"out no dir", []string{"--out", "/nonexistent/dir/fix.patch", repo, "fix it"}, "the directory /nonexistent/dir does not exist"},
		{"no model", []string{"--provider", "openai", "--model", "", repo, "fix it"}, "model"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "runs.db")
			args := append(append(append([]string{"swe"}, model...), "--db", db), tc.args...)
			out, err := crucibleCmd(args...).CombinedOutput()
			if code := exitOf(err); code != exitUsage {
				t.Errorf("exit %d, want %d; output:\n%s", code, exitUsage, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			if _, err := os.Stat(db); err == nil {
				t.Errorf("the run store %s was created: something ran", db)
			}
		})
	}
}

// TestSWEExit: each status's exit code.
func TestSWEExit(t *testing.T) {
	for status, want := range map[swe.Status]int{
		swe.StatusResolved: 0, swe.StatusUnresolved: 1, swe.StatusTestsEdited: 1, swe.StatusNoChange: 3,
		swe.StatusBudget: 3, swe.StatusLooping: 3, swe.StatusRefused: 3, swe.StatusDenied: 3, swe.StatusFailed: exitInternal,
	} {
		var ec exitCodeError
		got := 0
		if err := sweExit(status); asExitCode(err, &ec) {
			got = int(ec)
		}
		if got != want {
			t.Errorf("%s: exit %d, want %d", status, got, want)
		}
	}
}

// TestWriteDiff: off a terminal the diff is written byte for byte; on
// one, escape sequences in it are visible escapes, each line is coloured
// by its own first byte, and a line cannot colour the next.
func TestWriteDiff(t *testing.T) {
	diff := "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-print('a')\n+print('\x1b[2J\x1b]0;owned\x07')\n context\r\n"
	t.Setenv("NO_COLOR", "")
	for _, tc := range []struct {
		tty  bool
		want string
	}{
		{false, diff},
		{true, styleOn + "diff --git a/x.py b/x.py" + colorReset + "\n" +
			styleOn + "--- a/x.py" + colorReset + "\n" + styleOn + "+++ b/x.py" + colorReset + "\n" +
			colorHunk + "@@ -1 +1 @@" + colorReset + "\n" +
			colorRemoved + "-print('a')" + colorReset + "\n" +
			colorAdded + `+print('\x1b[2J\x1b]0;owned\x07')` + colorReset + "\n" +
			` context\r` + "\n"},
	} {
		var stdout bytes.Buffer
		d := newDisplayOn(&stdout, &bytes.Buffer{}, tc.tty, tc.tty, false, false)
		writeDiff(d, diff)
		if stdout.String() != tc.want {
			t.Errorf("tty %t: wrote\n%q\nwant\n%q", tc.tty, stdout.String(), tc.want)
		}
	}
}

// TestCheckTestID: test names are paths inside the repository, with
// pytest's ::parts.
func TestCheckTestID(t *testing.T) {
	for id, ok := range map[string]bool{
		"test_x.py": true, "tests/test_x.py::test_y[1-2]": true, "tests/": true, "a/./b.py": true,
		"": false, "::test_y": false, "../x.py": false, "a/../../x.py": false, "/abs.py": false, "-k": false, "x.py::a\nb": false,
	} {
		if err := checkTestID(id); (err == nil) != ok {
			t.Errorf("%q: %v, want ok %t", id, err, ok)
		}
	}
}

// TestSWEOnServer: with --server, crucible swe sends the directory as an
// agent run of mode swe to `crucible serve` (its model: a scripted one, a
// local server speaking the OpenAI wire format), follows it and prints
// its result as a local run does (the --max-steps given sent, the
// budget the server reports); --out writes the same patch. Needs
// root and the data-science image.
func TestSWEOnServer(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	const key = "sk-scripted-model-key-swe-server"
	model := scriptedSWEModel(t, key, fixerCalls("calc.py", "return a - b", "return a + b"))
	_, base := startServe(t, "datascience", fmt.Sprintf(`{"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}}`, model.URL+"/v1"),
		"CRUCIBLE_TEST_MODEL_KEY="+key)
	repo := bugRepo(t)
	before := treeHash(t, repo)
	patch := filepath.Join(t.TempDir(), "fix.patch")
	cmd := crucibleCmd("swe", "--server", base, "--out", patch, "--max-steps", "7", "--test", "test_calc.py::test_add", repo, "fix the failing test in test_calc.py")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("crucible swe --server: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"status: resolved", "fail_to_pass: test_calc.py::test_add", "+    return a + b\n", "submitted true", "steps 4/7 "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "swe: agent run agt_") {
		t.Errorf("stderr does not name the server's agent run:\n%s", stderr.String())
	}
	if b, err := os.ReadFile(patch); err != nil || !strings.Contains(string(b), "+    return a + b\n") {
		t.Errorf("the patch: %v\n%s", err, b)
	}
	if treeHash(t, repo) != before {
		t.Error("the user's directory changed")
	}
}

// TestSWEApproveDenied: with --approve, each command is shown before it
// runs; answering no ends the run denied (exit 3) without running it
// (the repository is left unchanged).
// Needs root and the data-science image.
func TestSWEApproveDenied(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	model := scriptedSWEModel(t, "", []sweCall{{"bash", map[string]any{"command": "touch ran-it && cat calc.py"}}, {"submit", map[string]any{}}})
	cmd := crucibleCmd("swe", "--provider", "openai", "--base-url", model.URL+"/v1", "--api-key", "test", "--model", "scripted",
		"--db", filepath.Join(t.TempDir(), "runs.db"), "--approve", bugRepo(t), "fix the failing test")
	cmd.Stdin = strings.NewReader("n\n")
	out, err := cmd.CombinedOutput()
	if code := exitOf(err); code != exitSWENoChange {
		t.Errorf("exit %d, want %d:\n%s", code, exitSWENoChange, out)
	}
	// Had the command run, ran-it would be in the repository, and the change.
	for _, want := range []string{"the agent wants to run", "touch ran-it && cat calc.py", "status: denied", "\nno change\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestSWEArchives: a git bundle and a gzip'd tarball are read as they
// are (their format from their names) and resolve as the directory does.
// Needs root, the data-science image and the host's git and tar.
func TestSWEArchives(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	repo := bugRepo(t)
	dir := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		c := exec.Command(name, args...)
		c.Dir = repo
		c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("tar", "czf", filepath.Join(dir, "repo.tgz"), ".")
	run("git", "init", "-q")
	run("git", "add", "-A")
	run("git", "commit", "-qm", "calc")
	run("git", "bundle", "create", "-q", filepath.Join(dir, "repo.bundle"), "--all")
	for _, archive := range []string{"repo.tgz", "repo.bundle"} {
		t.Run(archive, func(t *testing.T) {
			model := scriptedSWEModel(t, "", fixerCalls("calc.py", "return a - b", "return a + b"))
			out, err := crucibleCmd("swe", "--provider", "openai", "--base-url", model.URL+"/v1", "--api-key", "test", "--model", "scripted",
				"--db", filepath.Join(t.TempDir(), "runs.db"), "--test", "test_calc.py::test_add", filepath.Join(dir, archive), "fix the failing test").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "status: resolved") || !strings.Contains(string(out), "+    return a + b\n") {
				t.Errorf("crucible swe %s: %v\n%s", archive, err, out)
			}
		})
	}
}

// TestSWEVerdicts: the verdict, not the model's claim, sets the status
// and the exit code, end to end with scripted models: one that edits the
// named test instead of the code, through bash (tests_edited, exit 1), one that fixes
// add but breaks neg (unresolved, exit 1, neg listed as broken), one that
// submits nothing (no_change, exit 3). Needs root and the data-science
// image.
func TestSWEVerdicts(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	cases := []struct {
		name  string
		calls []sweCall
		tests []string
		exit  int
		want  []string
	}{
		{"test editor", []sweCall{ // through bash: the edit tool refuses a named test's file
			{"bash", map[string]any{"command": "sed -i 's/== 5/== -1/' test_calc.py"}},
			{"submit", map[string]any{}},
		}, []string{"test_calc.py::test_add"},
			exitSWEUnresolved, []string{"status: tests_edited", "test edits: test_calc.py", "+    assert add(2, 3) == -1\n"}},
		{"breaker", []sweCall{
			{"edit", map[string]any{"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "return a + b"}},
			{"edit", map[string]any{"command": "str_replace", "path": "calc.py", "old_str": "return -a", "new_str": "return a"}},
			{"submit", map[string]any{}},
		}, nil, exitSWEUnresolved, []string{"status: unresolved", "broken: test_calc.py::test_neg", "tests after: 1 passed, 1 failed", "failed  test_calc.py::test_neg"}},
		{"no change", []sweCall{{"submit", map[string]any{}}}, nil, exitSWENoChange, []string{"status: no_change", "\nno change\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := scriptedSWEModel(t, "", tc.calls)
			args := []string{"swe", "--provider", "openai", "--base-url", model.URL + "/v1", "--api-key", "test", "--model", "scripted",
				"--db", filepath.Join(t.TempDir(), "runs.db")}
			for _, id := range tc.tests {
				args = append(args, "--test", id)
			}
			out, err := crucibleCmd(append(args, bugRepo(t), "fix the failing test")...).Output()
			if code := exitOf(err); code != tc.exit {
				t.Errorf("exit %d, want %d:\n%s", code, tc.exit, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestSWEOnServerApprove: with --server and --approve, the server's
// approval of each command is asked on the terminal and the answer sent
// back: refused, the run ends denied (exit 3) and the command never ran
// (the change is empty). Needs root and the data-science image.
func TestSWEOnServerApprove(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	const key = "sk-scripted-model-key-swe-approve"
	model := scriptedSWEModel(t, key, []sweCall{{"bash", map[string]any{"command": "touch ran-it"}}, {"submit", map[string]any{}}})
	_, base := startServe(t, "datascience", fmt.Sprintf(`{"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}}`, model.URL+"/v1"),
		"CRUCIBLE_TEST_MODEL_KEY="+key)
	cmd := crucibleCmd("swe", "--server", base, "--approve", bugRepo(t), "fix the failing test")
	cmd.Stdin = strings.NewReader("n\n")
	out, err := cmd.CombinedOutput()
	if code := exitOf(err); code != exitSWENoChange {
		t.Errorf("exit %d, want %d:\n%s", code, exitSWENoChange, out)
	}
	for _, want := range []string{"the agent wants to run ---\ntouch ran-it\n", "status: denied", "\nno change\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestSWECodePolicy: the local run's commands are checked by the code
// policy as crucible serve's are (at least warn): a command that fetches
// from the network is named in the progress with what the policy found,
// and the platform's own cells (the tools' wrappers) are not flagged.
// Needs root and the data-science image.
func TestSWECodePolicy(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	calls := append([]sweCall{{"bash", map[string]any{"command": "curl --version >/dev/null 2>&1; echo after-curl"}}},
		fixerCalls("calc.py", "return a - b", "return a + b")...)
	model := scriptedSWEModel(t, "", calls)
	cmd := crucibleCmd("swe", "--provider", "openai", "--base-url", model.URL+"/v1", "--api-key", "test", "--model", "scripted",
		"--db", filepath.Join(t.TempDir(), "runs.db"), bugRepo(t), "fix the failing test")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("crucible swe: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "the code policy (warn") || !strings.Contains(stderr.String(), "after-curl") {
		t.Errorf("the policy's finding in the curl command, or its output, is not shown:\n%s", stderr.String())
	}
	if n := strings.Count(stderr.String(), "the code policy"); n != 1 {
		t.Errorf("%d policy findings, want the curl command's only:\n%s", n, stderr.String())
	}
}
