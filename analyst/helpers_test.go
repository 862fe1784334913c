package analyst

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// newRuntime returns a native runtime in the data-science image, closed
// when tb ends. It skips tb without root or without the image (unless CI
// is set: there both are part of the setup).
func newRuntime(tb testing.TB) *linux.Runtime {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("skipping: the native runtime needs root")
	}
	img, err := image.Open(image.DefaultStore, "datascience")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("the data-science image is required under CI: %v", err)
		}
		tb.Skipf("skipping: no data-science image (%v); build it with `crucible image build`", err)
	}
	rt, err := linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest})
	if err != nil {
		tb.Fatalf("linux.New: %v", err)
	}
	tb.Cleanup(func() { _ = rt.Close() })
	return rt
}

// openAnalysis opens an analysis of datasets on rt, closed when tb ends.
func openAnalysis(tb testing.TB, rt sandbox.SessionRuntime, datasets ...Dataset) *Analysis {
	tb.Helper()
	a, err := Open(context.Background(), rt, sandbox.SessionRequest{}, datasets)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = a.Close() })
	return a
}

// dabenchDir returns the dabench tables directory. CRUCIBLE_DATASETS, if
// set, names the datasets directory (the one holding dabench/); otherwise
// it is ../shared/datasets relative to the repository, which every
// ancestor of the working directory is searched for. A missing data set
// fails the test under CI and skips it elsewhere.
func dabenchDir(tb testing.TB) string {
	tb.Helper()
	if root := os.Getenv("CRUCIBLE_DATASETS"); root != "" {
		dir := filepath.Join(root, "dabench", "tables")
		if _, err := os.Stat(dir); err != nil {
			tb.Fatalf("CRUCIBLE_DATASETS=%s, but %v", root, err)
		}
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for dir := wd; filepath.Dir(dir) != dir; dir = filepath.Dir(dir) {
		if cand := filepath.Join(dir, "shared", "datasets", "dabench", "tables"); isDir(cand) {
			return cand
		}
	}
	msg := "dabench not found: no shared/datasets/dabench/tables in any ancestor of " + wd + "; set CRUCIBLE_DATASETS"
	if os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// asInput is errors.As for an *sandbox.InputError.
func asInput(err error, ie **sandbox.InputError) bool { return errors.As(err, ie) }
