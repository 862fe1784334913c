package swe

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// QuixBugsTestCommand runs a QuixBugs task's tests from the repository's
// root. pytest-timeout bounds each test: some buggy programs loop
// forever, and a test that hangs must fail, not stall the run.
const QuixBugsTestCommand = "python3 -m pytest -q -p no:cacheprovider --timeout 10 python_testcases"

// QuixBugsNeighbours is how many other programs, in their CORRECT
// versions and with their tests, each task's repository holds beside the
// buggy one: a change that breaks them fails the task.
const QuixBugsNeighbours = 2

// BenchTask is one task of a benchmark.
type BenchTask struct {
	// Name names the task (the QuixBugs program's name).
	Name string `json:"name"`
	// Task is what the agent is given.
	Task Task `json:"-"`
	// Neighbours name the other programs in the repository, whose tests
	// must keep passing.
	Neighbours []string `json:"neighbours,omitempty"`
}

// The layout of a QuixBugs folder (see its README).
const (
	qbBuggy    = "python_programs"
	qbCorrect  = "correct_python_programs"
	qbTests    = "python_testcases"
	qbJSON     = "json_testcases"
	qbConftest = "conftest.py"
)

// qbSupport are the test directory's helpers every task needs: the JSON
// loader and the graph programs' Node.
var qbSupport = []string{"load_testdata.py", "node.py"}

// QuixBugs builds one task per program of the QuixBugs folder dir (the
// Python part: python_programs, correct_python_programs,
// python_testcases, json_testcases, conftest.py) that has a test file and
// a correct version, in the order of their names.
//
// A task's repository is a gzip'd tar holding the buggy
// python_programs/NAME.py, the correct versions of the next
// QuixBugsNeighbours programs in that order (wrapping round), their three
// test files with the helpers and the JSON test data they read, and
// conftest.py; never NAME's correct version. The graph programs'
// python_programs/*_test.py are left out: no test imports them. The
// named tests are the three test files, so a change must make NAME's
// tests pass, keep its cases that passed passing, leave the neighbours'
// tests passing, and not touch any of them.
//
// The folder is only read; every file goes into the archive as bytes.
func QuixBugs(dir string) ([]BenchTask, error) {
	for _, sub := range []string{qbBuggy, qbCorrect, qbTests} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("quixbugs %s: not a QuixBugs folder: it must hold the directory %s/", dir, sub)
		}
	}
	names, err := quixBugsPrograms(dir)
	if err != nil {
		return nil, err
	}
	if len(names) < QuixBugsNeighbours+1 {
		return nil, fmt.Errorf("quixbugs %s: %d programs with tests and a correct version; at least %d are needed (each task holds %d neighbours)",
			dir, len(names), QuixBugsNeighbours+1, QuixBugsNeighbours)
	}
	tasks := make([]BenchTask, len(names))
	for i, name := range names {
		neighbours := make([]string, QuixBugsNeighbours)
		for j := range neighbours {
			neighbours[j] = names[(i+1+j)%len(names)]
		}
		archive, err := quixBugsArchive(dir, name, neighbours)
		if err != nil {
			return nil, err
		}
		tests := []string{quixBugsTestFile(name)}
		for _, n := range neighbours {
			tests = append(tests, quixBugsTestFile(n))
		}
		tasks[i] = BenchTask{Name: name, Neighbours: neighbours, Task: Task{
			Repo:        Repo{Format: RepoTar, Archive: archive},
			Prompt:      quixBugsPrompt(name),
			TestCommand: QuixBugsTestCommand,
			Tests:       tests,
		}}
	}
	return tasks, nil
}

// quixBugsPrompt is a task's text, as a user would write it.
func quixBugsPrompt(name string) string {
	return fmt.Sprintf("The tests in %s fail. Fix the bug in %s/%s.py. The other tests must keep passing.",
		quixBugsTestFile(name), qbBuggy, name)
}

// quixBugsTestFile is the test file of program name, from the root.
func quixBugsTestFile(name string) string { return qbTests + "/test_" + name + ".py" }

// quixBugsPrograms lists the programs of dir that have a test file and a
// correct version: python_programs/NAME.py other than the graph data
// files (*_test.py) and node.py.
func quixBugsPrograms(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, qbBuggy))
	if err != nil {
		return nil, fmt.Errorf("quixbugs %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".py")
		if !ok || !e.Type().IsRegular() || name == "node" || strings.HasSuffix(name, "_test") {
			continue
		}
		if !regularFile(filepath.Join(dir, qbTests, "test_"+name+".py")) || !regularFile(filepath.Join(dir, qbCorrect, name+".py")) {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// regularFile reports whether p is a regular file (not a symlink).
func regularFile(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// quixBugsArchive packs the repository of program name's task.
func quixBugsArchive(dir, name string, neighbours []string) ([]byte, error) {
	files := [][2]string{ // path in the repository, path in dir
		{qbConftest, qbConftest},
		{qbBuggy + "/" + name + ".py", qbBuggy + "/" + name + ".py"},
	}
	for _, n := range neighbours {
		files = append(files, [2]string{qbBuggy + "/" + n + ".py", qbCorrect + "/" + n + ".py"})
	}
	for _, s := range qbSupport {
		files = append(files, [2]string{qbTests + "/" + s, qbTests + "/" + s})
	}
	for _, n := range append([]string{name}, neighbours...) {
		files = append(files, [2]string{quixBugsTestFile(n), quixBugsTestFile(n)})
		if data := qbJSON + "/" + n + ".json"; regularFile(filepath.Join(dir, data)) {
			files = append(files, [2]string{data, data})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i][0] < files[j][0] })

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	// A fixed time: the same folder gives the same bytes.
	mtime := time.Date(2017, 10, 22, 0, 0, 0, 0, time.UTC)
	dirs := map[string]bool{}
	for _, f := range files {
		if d := path.Dir(f[0]); d != "." && !dirs[d] {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime}); err != nil {
				return nil, err
			}
		}
		src := filepath.Join(dir, filepath.FromSlash(f[1]))
		if !regularFile(src) {
			return nil, fmt.Errorf("quixbugs %s: %s: missing or not a regular file (task %s needs it)", dir, f[1], name)
		}
		content, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("quixbugs %s: %w", dir, err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f[0], Mode: 0o644, Size: int64(len(content)), ModTime: mtime}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() > MaxRepoBytes {
		return nil, fmt.Errorf("quixbugs %s: task %s: the repository is %d bytes, over %d", dir, name, buf.Len(), MaxRepoBytes)
	}
	return buf.Bytes(), nil
}
