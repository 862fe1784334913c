// Package testenv is the one way a test says what it needs from the
// machine: root, a built image, Chromium, the npm MCP clients, the data
// sets beside the clone, PostgreSQL's binaries. Each function checks its
// need and, when it is not met, skips the test with the reason and how to
// meet it, or, when the CI environment variable is set, fails it: under
// CI, scripts/setup.sh has met every need a test can have, so a missing
// one is a broken setup, not a reason to pass in silence.
//
// It is imported only from _test files. It imports nothing of Crucible's
// but package image, so that the in-package tests of every other package
// (sandbox/linux's among them) can use it without an import cycle.
package testenv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// CI reports whether the tests run under CI: the CI variable is set to
// anything but "" (CI services set CI=true).
func CI() bool { return os.Getenv("CI") != "" }

// Missing reports that tb's need is not met. need says what the test
// needs and what for; how says how to meet it. Under CI it fails tb;
// elsewhere it skips tb. Either way tb stops here.
func Missing(tb testing.TB, need, how string) {
	tb.Helper()
	if CI() {
		tb.Fatalf("needs %s; CI is set, so a missing need fails the test instead of skipping it: %s", need, how)
	}
	tb.Skipf("skipping: needs %s (%s)", need, how)
}

// setup is how to meet a need that scripts/setup.sh meets.
const setup = "run scripts/setup.sh as root, as scripts/test.sh does"

// Root stops tb unless it runs as root, as the native sandbox needs: it
// creates cgroups and mount and network namespaces, and runs programs as
// unprivileged users of its own.
func Root(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Missing(tb, "root: the native sandbox creates cgroups and mount and network namespaces",
			"run the tests as root, as scripts/test.sh does")
	}
}

// RepoRoot returns the directory of this module's go.mod, searched from
// the working directory (a test's is its package's directory) up.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/crucible-sandbox/crucible\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/crucible-sandbox/crucible above the working directory")
		}
		dir = parent
	}
}

// repoRoot is RepoRoot, failing tb when there is none (the tests always
// run inside the module).
func repoRoot(tb testing.TB) string {
	tb.Helper()
	root, err := RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return root
}

// exists reports whether path exists; isDir asks for a directory.
func exists(path string, isDir bool) bool {
	fi, err := os.Stat(path)
	return err == nil && (!isDir || fi.IsDir())
}
