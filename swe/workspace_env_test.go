package swe

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// wsConfig is a Config whose sessions run natively in the data-science
// image (which has bash, git, patch and pytest), the runtime closed when
// tb ends; it needs root and the image.
func wsConfig(tb testing.TB) Config {
	tb.Helper()
	testenv.Root(tb)
	img := testenv.Image(tb, "datascience")
	rt, err := linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest})
	if err != nil {
		tb.Fatalf("linux.New: %v", err)
	}
	tb.Cleanup(func() { _ = rt.Close() })
	return Config{Sandbox: rt}
}

// hostGit returns the host's git, which builds the bundles the tests
// unpack, or stops tb.
func hostGit(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		testenv.Missing(tb, "git on the host, to build git bundles", "install Debian's git (scripts/setup.sh)")
	}
	return p
}

// tinyRepo is a repository with a bug: add subtracts. test_add fails
// before the fix; test_sub passes.
var tinyRepo = map[string]string{
	"calc.py":               "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
	"tests/test_calc.py":    "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n",
	"tests/__init__.py":     "",
	"conftest.py":           "import os, sys\nsys.path.insert(0, os.path.dirname(__file__))\n",
	"scripts/run.sh":        "#!/bin/sh\necho run\n",
	"README.md":             "a tiny repository\n",
	"data/blob.bin":         "\x00\x01\x02binary\xff",
	"docs/guide/intro.txt":  "intro\n",
	"docs/guide/detail.txt": "detail\n",
	".gitignore":            "*.log\n",
	"app.log":               "an ignored file of the input\n",
}

// fixDiff fixes tinyRepo's bug, as git diff writes it; fuzzyFixDiff is
// the same fix with its trailing context cut (git apply then takes the
// hunk for the end of the file and refuses it; patch --fuzz applies it);
// breakDiff fixes add and breaks sub; staleDiff changes lines the file
// does not have.
const fixDiff = `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def sub(a, b):
`

const fuzzyFixDiff = `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
`

const breakDiff = `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,6 +1,6 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def sub(a, b):
-    return a - b
+    return b - a
`

const staleDiff = `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,3 +1,3 @@
 def multiply(a, b):
-    return a / b
+    return a * b
 
`

// writeTree writes files (slash paths) under dir; scripts/*.sh are made
// executable.
func writeTree(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if filepath.Ext(p) == ".sh" {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			tb.Fatal(err)
		}
	}
}

// tinyRepoTarGz is tinyRepo packed by FromDir.
func tinyRepoTarGz(tb testing.TB) Repo {
	tb.Helper()
	dir := tb.TempDir()
	writeTree(tb, dir, tinyRepo)
	r, err := FromDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// tarMember is one member of a hand-built tar.
type tarMember struct {
	hdr     tar.Header
	content string
}

// buildTar packs members as a tar (gzip'd if gz), as written.
func buildTar(tb testing.TB, gz bool, members ...tarMember) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var zw *gzip.Writer
	var w io.Writer = &buf
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, m := range members {
		h := m.hdr
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(m.content))
		}
		if err := tw.WriteHeader(&h); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write([]byte(m.content)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return buf.Bytes()
}

// readRepoFile reads a file of the workspace's repository.
func readRepoFile(tb testing.TB, w *workspace, name string) string {
	tb.Helper()
	b, err := w.sess.ReadFile(tb.Context(), repoDir+"/"+name)
	if err != nil {
		tb.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

// asInputError is errors.As for an *sandbox.InputError.
func asInputError(err error) *sandbox.InputError {
	var e *sandbox.InputError
	if errors.As(err, &e) {
		return e
	}
	return nil
}
