package swe

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// toolLoop opens a workspace on the tiny repository (plus files) and
// returns a loop whose tools can be called directly, without a model.
func toolLoop(t *testing.T, extra map[string]string) *loop {
	t.Helper()
	files := map[string]string{"calc.py": calcBuggy, "test_calc.py": calcTests}
	for k, v := range extra {
		files[k] = v
	}
	cfg := Config{Sandbox: nativeRuntime(t), CallTimeout: 30 * time.Second}
	cfg.withDefaults()
	task := calcTask(t)
	task.Repo = Repo{Archive: tarGz(t, files)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, err := openWorkspace(ctx, cfg, task.Repo)
	if err != nil {
		t.Fatalf("openWorkspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.close() })
	return &loop{cfg: cfg, task: task, ws: ws, res: &Result{}, history: map[string][]fileVersion{}, repeats: map[string]int{}, warned: map[string]bool{}}
}

// call runs one tool call and returns what the model is shown.
func (l *loop) call(t *testing.T, name string, args any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := l.callTool(ctx, name, json.RawMessage(mustJSON(args)))
	if o.end != nil {
		t.Fatalf("%s %v ended the run: %+v", name, args, o.end)
	}
	return o.out
}

// The tools on a real workspace, each step's output checked: what the
// model sees and what the repository then holds (read back with bash).
func TestTools(t *testing.T) {
	l := toolLoop(t, map[string]string{"pkg/util.py": "X = 1\nX = 1\n", "pkg/deep/more/far.py": "", "run.sh": "#!/bin/sh\necho hi\n"})
	for _, step := range []struct {
		name string
		tool string
		args any
		want []string // substrings of the output
		not  []string
	}{
		{"view a file", "view", map[string]any{"path": "calc.py"}, []string{"     1\tdef add(a, b):", "     6\t    return a + b"}, nil},
		{"view a range, absolute path", "view", map[string]any{"path": "/work/repo/calc.py", "start_line": 5, "end_line": 6}, []string{"     5\tdef subtract"}, []string{"def add"}},
		{"view a range past the end", "view", map[string]any{"path": "calc.py", "start_line": 40}, []string{"outside the file's lines 1 to 6"}, nil},
		{"view the root: two levels", "view", map[string]any{"path": "."}, []string{"calc.py", "pkg/", "  deep/", "  util.py"}, []string{"far.py", ".git", ".swe"}},
		{"view outside the repository", "view", map[string]any{"path": "/etc/passwd"}, []string{"outside the repository"}, []string{"root:"}},
		{"view climbing out", "view", map[string]any{"path": "pkg/../../.swe-input"}, []string{"outside the repository"}, nil},
		{"view a missing file", "view", map[string]any{"path": "nope.py"}, []string{"no such file or directory: nope.py"}, nil},
		{"str_replace with two matches", "edit", map[string]any{"command": "str_replace", "path": "pkg/util.py", "old_str": "X = 1", "new_str": "X = 2"}, []string{"occurs 2 times", "at lines 1, 2", "Nothing was changed"}, nil},
		{"str_replace with no match, whitespace off", "edit", map[string]any{"command": "str_replace", "path": "calc.py", "old_str": "def subtract(a, b):\n  return a + b", "new_str": "x"}, []string{"occurs 0 times", "different whitespace"}, nil},
		{"str_replace", "edit", map[string]any{"command": "str_replace", "path": "calc.py", "old_str": "    return a + b\n\n\ndef subtract", "new_str": "    return a + b  # sum\n\n\ndef subtract"}, []string{"Edited calc.py", "     2\t    return a + b  # sum"}, nil},
		{"insert at the top", "edit", map[string]any{"command": "insert", "path": "calc.py", "insert_line": 0, "new_str": "\"\"\"Arithmetic.\"\"\""}, []string{"     1\t\"\"\"Arithmetic.\"\"\"", "     2\tdef add"}, nil},
		{"insert past the end", "edit", map[string]any{"command": "insert", "path": "calc.py", "insert_line": 99, "new_str": "x"}, []string{"outside 0 to 7"}, nil},
		{"create in a new directory", "edit", map[string]any{"command": "create", "path": "lib/new.py", "file_text": "VALUE = 3\n"}, []string{"Edited lib/new.py (create)", "     1\tVALUE = 3"}, nil},
		{"create over a file", "edit", map[string]any{"command": "create", "path": "calc.py", "file_text": ""}, []string{"already exists"}, nil},
		{"edit a named test", "edit", map[string]any{"command": "str_replace", "path": "./test_calc.py", "old_str": "== 2", "new_str": "== 8"}, []string{"edits to it are refused"}, nil},
		{"edit an executable keeps its mode", "edit", map[string]any{"command": "str_replace", "path": "run.sh", "old_str": "hi", "new_str": "ho"}, []string{"echo ho"}, nil},
		{"the files as bash sees them", "bash", map[string]any{"command": "./run.sh && head -3 calc.py && cat lib/new.py && git status --short | sort"}, []string{"exit code: 0", "ho\n\"\"\"Arithmetic.\"\"\"\ndef add(a, b):\n    return a + b  # sum\nVALUE = 3"}, nil},
		{"undo the insert", "edit", map[string]any{"command": "undo", "path": "calc.py"}, []string{"back as it was", "     1\tdef add(a, b):"}, nil},
		{"undo the replace", "edit", map[string]any{"command": "undo", "path": "calc.py"}, []string{"     2\t    return a + b"}, []string{"# sum"}},
		{"nothing more to undo", "edit", map[string]any{"command": "undo", "path": "calc.py"}, []string{"no edit of calc.py to undo"}, nil},
		{"undo a create removes the file", "edit", map[string]any{"command": "undo", "path": "lib/new.py"}, []string{"did not exist before, and was removed"}, nil},
		{"an unknown edit command", "edit", map[string]any{"command": "delete", "path": "calc.py"}, []string{"unknown edit command"}, nil},
		{"search a fixed string", "search", map[string]any{"pattern": "a + b"}, []string{"calc.py:2:    return a + b", "calc.py:6:    return a + b"}, nil},
		{"search a regex within a path", "search", map[string]any{"pattern": "^X = [0-9]$", "regex": true, "path": "pkg"}, []string{"2 matching lines", "pkg/util.py:1:X = 1"}, []string{"calc.py"}},
		{"search file names", "search", map[string]any{"pattern": "far"}, []string{"Files whose names hold the pattern:\npkg/deep/more/far.py"}, nil},
		{"search a pattern that is no option", "search", map[string]any{"pattern": "--version"}, []string{"No line matches."}, []string{"GNU"}},
		{"bash exit code and stderr", "bash", map[string]any{"command": "echo out; echo err >&2; exit 3"}, []string{"exit code: 3", "out\nerr"}, nil},
		{"bash with no output", "bash", map[string]any{"command": "true"}, []string{"exit code: 0\n(no output)"}, nil},
		{"bash output clipped, head and tail", "bash", map[string]any{"command": "seq 1 20000"}, []string{"output:\n1\n2\n", "bytes cut ...]", "19999\n20000"}, []string{"\n10000\n"}},
		{"run_tests", "run_tests", map[string]any{}, []string{"1 passed, 1 failed", "Failing: test_calc.py::test_subtract"}, nil},
		{"SWE-agent's editor viewing a range", "str_replace_editor", map[string]any{"command": "view", "path": "calc.py", "view_range": []int{5, 5}}, []string{"     5\tdef subtract"}, []string{"return"}},
		{"OpenHands' execute_bash", "execute_bash", map[string]any{"command": "echo aliased"}, []string{"exit code: 0", "aliased"}, nil},
		{"an unknown tool", "delete_repo", map[string]any{}, []string{`There is no tool "delete_repo"`, "bash, view, edit, search, run_tests, submit"}, nil},
		{"a missing argument", "bash", map[string]any{}, []string{"bash needs the argument(s) command"}, nil},
	} {
		t.Run(step.name, func(t *testing.T) {
			out := l.call(t, step.tool, step.args)
			for _, w := range step.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q lacks %q", out, w)
				}
			}
			for _, n := range step.not {
				if strings.Contains(out, n) {
					t.Errorf("output %q holds %q", out, n)
				}
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	diff, err := l.ws.diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(diff, "calc.py") || strings.Contains(diff, "new.py") || strings.Contains(diff, "old mode") || !strings.Contains(diff, "-echo hi\n+echo ho") {
		t.Errorf("diff after the undos %q: want run.sh's change only, its mode kept", diff)
	}
}

func TestRepoPath(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"calc.py", "calc.py", ""}, {"./a/../b.py", "b.py", ""}, {"/work/repo", ".", ""}, {"/work/repo/x/y.py", "x/y.py", ""},
		{"/work/repository/x", "", "outside"}, {"/work", "", "outside"}, {"../x", "", "outside"}, {"a/../../x", "", "outside"}, {"  ", "", "empty"},
	} {
		got, err := repoPath(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("repoPath(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestClipText(t *testing.T) {
	s := strings.Repeat("é", 100) // 200 bytes
	got := clipText(s, 51)
	if !strings.Contains(got, "bytes cut") || !strings.HasPrefix(got, "é") || !strings.HasSuffix(got, "é") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("clipText kept %q", got)
	}
	if clipText("short", 10) != "short" {
		t.Error("a short text was clipped")
	}
}

// recordingSession records the cells run in it.
type recordingSession struct {
	sandbox.Session
	mu    sync.Mutex
	cells []sandbox.Cell
}

func (s *recordingSession) Exec(ctx context.Context, cell sandbox.Cell) (sandbox.Result, error) {
	s.mu.Lock()
	s.cells = append(s.cells, cell)
	s.mu.Unlock()
	return s.Session.Exec(ctx, cell)
}

// The model's bash command is checked by the session's code policy (it is
// the model's code); the cells of view, search and edit are the
// platform's, its input only data, and unchecked.
func TestCellsCheckedByPolicy(t *testing.T) {
	l := toolLoop(t, nil)
	rec := &recordingSession{Session: l.ws.sess}
	l.ws.sess = rec
	l.call(t, "bash", map[string]string{"command": "true"})
	l.call(t, "view", map[string]string{"path": "."})
	l.call(t, "search", map[string]string{"pattern": "add"})
	l.call(t, "edit", map[string]string{"command": "create", "path": "n.py", "file_text": "x = 1\n"})
	want := map[string]bool{"_crucible_swe_bash": false, "_crucible_swe_list": true, "_crucible_swe_search": true, "_crucible_swe_write": true}
	if len(rec.cells) != len(want) {
		t.Fatalf("%d cells, want %d", len(rec.cells), len(want))
	}
	for _, c := range rec.cells {
		for name, unchecked := range want {
			if strings.Contains(c.Code, "def "+name) && c.Unchecked != unchecked {
				t.Errorf("cell %s: Unchecked %v, want %v", name, c.Unchecked, unchecked)
			}
		}
	}
}
