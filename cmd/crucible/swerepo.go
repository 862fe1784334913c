package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/swe"
)

// task checks crucible swe's arguments and flags and builds the task; an
// error names the argument or flag and the rule, and nothing has run.
func (f *sweFlags) task(repoArg, prompt string) (swe.Task, error) {
	if strings.TrimSpace(prompt) == "" {
		return swe.Task{}, errors.New("TASK: empty; say what to change, such as \"fix the failing test in test_x.py\"")
	}
	if len(prompt) > swe.MaxTaskBytes {
		return swe.Task{}, fmt.Errorf("TASK: %d bytes, over the limit of %d", len(prompt), swe.MaxTaskBytes)
	}
	if !utf8.ValidString(prompt) {
		return swe.Task{}, errors.New("TASK: not valid UTF-8")
	}
	if strings.ContainsRune(f.testCmd, 0) || strings.ContainsRune(f.testCmd, '\n') {
		return swe.Task{}, errors.New("--test-cmd: must be one line, without NUL")
	}
	if f.testCmd != "" && strings.TrimSpace(f.testCmd) == "" {
		return swe.Task{}, errors.New("--test-cmd: blank; leave it out for the default, python3 -m pytest -q")
	}
	if len(f.tests) > swe.MaxTests {
		return swe.Task{}, fmt.Errorf("--test: %d tests, over the limit of %d", len(f.tests), swe.MaxTests)
	}
	for _, id := range f.tests {
		if err := checkTestID(id); err != nil {
			return swe.Task{}, fmt.Errorf("--test %q: %w", id, err)
		}
	}
	if f.maxSteps < 1 {
		return swe.Task{}, fmt.Errorf("--max-steps %d: must be at least 1", f.maxSteps)
	}
	if f.maxWall <= 0 {
		return swe.Task{}, fmt.Errorf("--max-wall %s: must be positive", f.maxWall)
	}
	if f.timeout <= 0 {
		return swe.Task{}, fmt.Errorf("--timeout %s: must be positive", f.timeout)
	}
	repo, err := readRepo(repoArg, f.tests)
	if err != nil {
		return swe.Task{}, err
	}
	return swe.Task{Repo: repo, Prompt: prompt, TestCommand: f.testCmd, Tests: f.tests}, nil
}

// checkTestID checks a test's name: a path relative to the repository's
// root, inside it, optionally followed by pytest's ::name parts.
func checkTestID(id string) error {
	file, _, _ := strings.Cut(id, "::")
	switch {
	case strings.TrimSpace(id) == "" || file == "":
		return errors.New("empty; name a test file, or file::test as pytest does")
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return errors.New("holds a control character")
	case path.IsAbs(file) || !fs.ValidPath(path.Clean(file)) || strings.HasPrefix(path.Clean(file), "../") || path.Clean(file) == "..":
		return errors.New("its file must be a path inside the repository, relative to its root")
	case strings.HasPrefix(id, "-"):
		return errors.New("starts with -, as an option would")
	}
	return nil
}

// readRepo reads crucible swe's REPO: a directory is packed with
// swe.FromDir (it is only read), a .bundle file is a git bundle, a .tar,
// .tar.gz or .tgz file a tarball, read as they are. In a directory, each
// test's file must be there.
func readRepo(arg string, tests []string) (swe.Repo, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return swe.Repo{}, fmt.Errorf("REPO %q: %w", arg, errors.Unwrap(err))
	}
	if st.IsDir() {
		for _, id := range tests {
			file, _, _ := strings.Cut(id, "::")
			if _, err := os.Stat(filepath.Join(arg, filepath.FromSlash(path.Clean(file)))); err != nil {
				return swe.Repo{}, fmt.Errorf("--test %q: the repository %s has no %s", id, arg, file)
			}
		}
		repo, err := swe.FromDir(arg)
		if err != nil {
			return swe.Repo{}, fmt.Errorf("REPO %q: %w", arg, err)
		}
		return repo, nil
	}
	format, ok := repoFormatOf(arg)
	if !ok {
		return swe.Repo{}, fmt.Errorf("REPO %q: not a directory, a git bundle (.bundle) or a tarball (.tar, .tar.gz, .tgz)", arg)
	}
	if !st.Mode().IsRegular() {
		return swe.Repo{}, fmt.Errorf("REPO %q: not a regular file", arg)
	}
	if st.Size() > swe.MaxRepoBytes {
		return swe.Repo{}, fmt.Errorf("REPO %q: %d bytes, over the limit of %d", arg, st.Size(), swe.MaxRepoBytes)
	}
	file, err := os.Open(arg)
	if err != nil {
		return swe.Repo{}, fmt.Errorf("REPO %q: %w", arg, errors.Unwrap(err))
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, swe.MaxRepoBytes+1))
	if err != nil {
		return swe.Repo{}, fmt.Errorf("REPO %q: %w", arg, err)
	}
	if len(b) > swe.MaxRepoBytes {
		return swe.Repo{}, fmt.Errorf("REPO %q: over the limit of %d bytes", arg, swe.MaxRepoBytes)
	}
	if len(b) == 0 {
		return swe.Repo{}, fmt.Errorf("REPO %q: empty", arg)
	}
	return swe.Repo{Format: format, Archive: b}, nil
}

// repoFormatOf is the format a repository file's name says.
func repoFormatOf(name string) (swe.RepoFormat, bool) {
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".bundle"):
		return swe.RepoBundle, true
	case strings.HasSuffix(lower, ".tar"), strings.HasSuffix(lower, ".tar.gz"), strings.HasSuffix(lower, ".tgz"):
		return swe.RepoTar, true
	}
	return "", false
}

// checkNewFile checks that flag's file, if named, can be created: it does
// not exist and its directory does, so a run's result is not lost at its
// end for want of a place to write it.
func checkNewFile(flag, name string) error {
	if name == "" {
		return nil
	}
	if _, err := os.Lstat(name); err == nil {
		return fmt.Errorf("%s %s: exists; it is never replaced, choose another name", flag, name)
	}
	dir := filepath.Dir(name)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s %s: the directory %s does not exist", flag, name, dir)
	}
	return nil
}
