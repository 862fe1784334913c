package swe

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// pytestConfigs are the files pytest reads its configuration from (the
// options it runs with, which plugins load, which tests it selects): a
// change to one changes what the tests' results mean.
var pytestConfigs = []string{"pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "conftest.py"}

// testEdits lists the files diff touches that are tests, in the order the
// diff names them, and says whether the change is refused.
//
// A test file is: a named test's file (or a file in a named directory);
// a file named test_*.py or
// *_test.py; a file under a directory named tests or test; conftest.py
// (pytest's fixtures and hooks: it can rewrite any test's outcome); and
// pytest's configuration (pytest.ini, tox.ini, setup.cfg, pyproject.toml),
// which decides how the tests run.
//
// The change is refused when tests are named and it touches a named
// test's file, or a conftest.py or a pytest configuration file in the
// repository's root or a directory above a named test's file (those are
// the ones pytest reads for it). With no tests named nothing is refused:
// the edits are reported, and the caller decides.
func testEdits(diff string, named []string) (edited []string, refused bool) {
	for _, p := range diffPaths(diff) {
		if !isTestPath(p, named) {
			continue
		}
		edited = append(edited, p)
		if len(named) > 0 && governsNamed(p, named) {
			refused = true
		}
	}
	return edited, refused
}

// isTestPath says whether p (slash-separated, from the repository's root)
// is a test file (see testEdits).
func isTestPath(p string, named []string) bool {
	base := path.Base(p)
	switch {
	case slices.Contains(pytestConfigs, base):
		return true
	case strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py"), strings.HasSuffix(base, "_test.py"):
		return true
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		if dir == "tests" || dir == "test" {
			return true
		}
	}
	for _, id := range named {
		if file := testFile(id); p == file || strings.HasPrefix(p, file+"/") {
			return true
		}
	}
	return false
}

// governsNamed says whether a change to p changes how a named test runs:
// p is the test's file (or a file inside a named directory), or a conftest
// or pytest configuration in a directory at or above the test's file.
func governsNamed(p string, named []string) bool {
	config := slices.Contains(pytestConfigs, path.Base(p))
	dir := path.Dir(p)
	for _, id := range named {
		file := testFile(id)
		if p == file || strings.HasPrefix(p, file+"/") {
			return true
		}
		if config && (dir == "." || strings.HasPrefix(file, dir+"/")) {
			return true
		}
	}
	return false
}

// diffPaths are the paths a unified diff touches, both sides of each file
// (a rename's old and new names), once each, as git apply -p1 and patch
// -p1 read them: from git's "diff --git" headers, the "---"/"+++" lines
// outside hunks (a hunk's lines are skipped by its counts, so a removed
// line "-- x" is not a file) and rename and copy lines, with the first
// path element stripped (a/, b/ or whatever a hand-written diff has).
// Quoted names (git quotes unusual bytes) are unquoted.
func diffPaths(diff string) []string {
	var paths []string
	add := func(p string, strip bool) {
		p = strings.TrimSpace(p)
		if strings.HasPrefix(p, `"`) {
			if q, err := strconv.Unquote(p); err == nil {
				p = q
			}
		}
		if i := strings.IndexByte(p, '\t'); i >= 0 { // "+++ b/x\t2024-01-01 ..." (a timestamp)
			p = p[:i]
		}
		if p == "/dev/null" || p == "" {
			return
		}
		if strip {
			_, rest, ok := strings.Cut(p, "/")
			if !ok {
				return
			}
			p = rest
		}
		p = path.Clean(p)
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	oldLeft, newLeft := 0, 0 // lines left in the current hunk
	for _, line := range strings.Split(diff, "\n") {
		if oldLeft > 0 || newLeft > 0 {
			switch {
			case strings.HasPrefix(line, "-"):
				oldLeft--
			case strings.HasPrefix(line, "+"):
				newLeft--
			case strings.HasPrefix(line, "\\"): // "\ No newline at end of file"
			default:
				oldLeft--
				newLeft--
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "@@ "):
			oldLeft, newLeft = hunkCounts(line)
		case strings.HasPrefix(line, "diff --git "):
			rest := line[len("diff --git "):]
			if i := strings.Index(rest, " b/"); i >= 0 {
				add(rest[:i], true)
				add(rest[i+1:], true)
			}
		case strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "+++ "):
			add(line[4:], true)
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "copy from "):
			_, name, _ := strings.Cut(line, " from ")
			add(name, false)
		case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "copy to "):
			_, name, _ := strings.Cut(line, " to ")
			add(name, false)
		}
	}
	return paths
}

// hunkCounts reads the line counts of a hunk header "@@ -a,b +c,d @@" (a
// count left out is 1).
func hunkCounts(header string) (old, new int) {
	f := strings.Fields(header)
	if len(f) < 3 {
		return 0, 0
	}
	count := func(r string) int {
		_, n, ok := strings.Cut(r, ",")
		if !ok {
			return 1
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 0 {
			return 0
		}
		return v
	}
	return count(f[1]), count(f[2])
}
