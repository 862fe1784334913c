package analyst

import (
	"context"
	"errors"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// newRuntime returns a native runtime in the data-science image, closed
// when tb ends; it needs root and the image.
func newRuntime(tb testing.TB) *linux.Runtime {
	tb.Helper()
	testenv.Root(tb)
	img := testenv.Image(tb, "datascience")
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

// asInput is errors.As for an *sandbox.InputError.
func asInput(err error, ie **sandbox.InputError) bool { return errors.As(err, ie) }
