package swe_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/swe"
)

// quixBugsDir is the shared QuixBugs folder; without it the test stops
// (fails under CI).
func quixBugsDir(tb testing.TB) string {
	tb.Helper()
	return testenv.Dataset(tb, "quixbugs")
}

// quixBugsNames are the programs of dir with tests, by the folder's own
// listing (independent of swe.QuixBugs).
func quixBugsNames(tb testing.TB, dir string) []string {
	tb.Helper()
	tests, err := filepath.Glob(filepath.Join(dir, "python_testcases", "test_*.py"))
	if err != nil || len(tests) == 0 {
		tb.Fatalf("no tests in %s: %v", dir, err)
	}
	var names []string
	for _, p := range tests {
		names = append(names, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "test_"), ".py"))
	}
	slices.Sort(names)
	return names
}

// untar lists a task's repository: path -> content (directories with
// content "/").
func untar(tb testing.TB, archive []byte) map[string]string {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		tb.Fatalf("not gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			tb.Fatalf("tar: %v", err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			files[strings.TrimSuffix(h.Name, "/")] = "/"
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			files[h.Name] = string(b)
		default:
			tb.Fatalf("tar: %s has type %c", h.Name, h.Typeflag)
		}
	}
}

// TestQuixBugsTasks checks the task builder on the shared folder: a task
// per program with tests, each repository holding the buggy program, two
// neighbours' correct versions and the three test files with what they
// read, and never the program's correct version.
func TestQuixBugsTasks(t *testing.T) {
	dir := quixBugsDir(t)
	names := quixBugsNames(t, dir)
	tasks, err := swe.QuixBugs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != len(names) || len(tasks) != 30 {
		t.Fatalf("%d tasks, want one per test file (%d; the folder has 30)", len(tasks), len(names))
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	again, _ := swe.QuixBugs(dir)
	for i, task := range tasks {
		name := names[i]
		if task.Name != name {
			t.Fatalf("task %d is %s, want %s (tasks in name order)", i, task.Name, name)
		}
		if !bytes.Equal(task.Task.Repo.Archive, again[i].Task.Repo.Archive) {
			t.Errorf("%s: two builds differ: the archive must be deterministic", name)
		}
		want := []string{names[(i+1)%len(names)], names[(i+2)%len(names)]}
		if !slices.Equal(task.Neighbours, want) {
			t.Errorf("%s: neighbours %v, want the next two by name %v", name, task.Neighbours, want)
		}
		files := untar(t, task.Task.Repo.Archive)
		expect := map[string]string{
			"conftest.py":                           read("conftest.py"),
			"python_programs/" + name + ".py":       read("python_programs/" + name + ".py"),
			"python_testcases/load_testdata.py":     read("python_testcases/load_testdata.py"),
			"python_testcases/node.py":              read("python_testcases/node.py"),
			"python_testcases/test_" + name + ".py": read("python_testcases/test_" + name + ".py"),
		}
		tests := []string{"python_testcases/test_" + name + ".py"}
		for _, n := range task.Neighbours {
			expect["python_programs/"+n+".py"] = read("correct_python_programs/" + n + ".py")
			expect["python_testcases/test_"+n+".py"] = read("python_testcases/test_" + n + ".py")
			tests = append(tests, "python_testcases/test_"+n+".py")
		}
		for _, n := range append([]string{name}, task.Neighbours...) {
			if _, err := os.Stat(filepath.Join(dir, "json_testcases", n+".json")); err == nil {
				expect["json_testcases/"+n+".json"] = read("json_testcases/" + n + ".json")
			}
		}
		for p, content := range files {
			if content == "/" {
				continue
			}
			if w, ok := expect[p]; !ok {
				t.Errorf("%s: the repository holds %s, which it should not", name, p)
			} else if w != content {
				t.Errorf("%s: %s is not the folder's file it should be", name, p)
			}
		}
		for p := range expect {
			if _, ok := files[p]; !ok {
				t.Errorf("%s: the repository lacks %s", name, p)
			}
		}
		if correct := read("correct_python_programs/" + name + ".py"); files["python_programs/"+name+".py"] == correct {
			t.Errorf("%s: the repository holds the correct program", name)
		}
		if !slices.Equal(task.Task.Tests, tests) {
			t.Errorf("%s: tests %v, want %v", name, task.Task.Tests, tests)
		}
		if task.Task.TestCommand != swe.QuixBugsTestCommand {
			t.Errorf("%s: test command %q", name, task.Task.TestCommand)
		}
		for _, s := range []string{"python_testcases/test_" + name + ".py", "python_programs/" + name + ".py"} {
			if !strings.Contains(task.Task.Prompt, s) {
				t.Errorf("%s: the prompt %q does not name %s", name, task.Task.Prompt, s)
			}
		}
	}
}

// TestQuixBugsBadFolder checks the builder's errors: a folder that is not
// QuixBugs', and one with too few programs for two neighbours.
func TestQuixBugsBadFolder(t *testing.T) {
	small := t.TempDir()
	for _, d := range []string{"python_programs", "correct_python_programs", "python_testcases"} {
		if err := os.Mkdir(filepath.Join(small, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a", "b"} {
		for _, p := range []string{"python_programs/" + n + ".py", "correct_python_programs/" + n + ".py", "python_testcases/test_" + n + ".py"} {
			if err := os.WriteFile(filepath.Join(small, p), []byte("x = 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct{ name, dir, want string }{
		{"missing", filepath.Join(t.TempDir(), "none"), "must hold the directory python_programs/"},
		{"two programs", small, "2 programs with tests and a correct version; at least 3 are needed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := swe.QuixBugs(tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("QuixBugs(%s) = %v, want an error saying %q", tc.dir, err, tc.want)
			}
		})
	}
}

func TestSelectBenchTasks(t *testing.T) {
	tasks := []swe.BenchTask{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for _, tc := range []struct {
		name    string
		n       int
		only    []string
		want    []string
		wantErr string
	}{
		{"all", 0, nil, []string{"a", "b", "c"}, ""},
		{"first two", 2, nil, []string{"a", "b"}, ""},
		{"more than there are", 5, nil, []string{"a", "b", "c"}, ""},
		{"only, in the tasks' order", 0, []string{"c", "a"}, []string{"a", "c"}, ""},
		{"only and n", 1, []string{"c", "b"}, []string{"b"}, ""},
		{"unknown name", 0, []string{"a", "zz"}, nil, "only: no task named zz; the tasks are a, b, c"},
		{"negative", -1, nil, nil, "tasks: must be at least 1 (0 for all), got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := swe.SelectBenchTasks(tasks, tc.n, tc.only)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			var names []string
			for _, g := range got {
				names = append(names, g.Name)
			}
			if err != nil || !slices.Equal(names, tc.want) {
				t.Errorf("SelectBenchTasks = %v, %v; want %v", names, err, tc.want)
			}
		})
	}
}
