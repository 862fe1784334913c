//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The rows' paths.
const (
	pathBare           = "bare"
	pathDockerRun      = "docker run"
	pathDockerRunRunsc = "docker run runsc"
	pathCold           = "cold"
	pathPooled         = "pooled"
	pathPooledAPI      = "pooled API"
	pathSession        = "session cell"
	// runtimeBaseline is the runtime column of the baselines.
	runtimeBaseline = "baseline"
)

// benchSubject is an open row. call runs the program once; settle, if
// set, waits, untimed, until what the row keeps ready is ready again;
// close releases what the row holds. detail says what it runs.
type benchSubject struct {
	detail string
	call   func(context.Context) outcome
	settle func(context.Context)
	close  func()
}

// benchRowSpec is a row of `crucible bench runtimes` and how to open it.
type benchRowSpec struct {
	runtime, path string
	open          func(context.Context, *benchEnv) (*benchSubject, error)
}

// notMeasuredError is a row the runtime cannot measure yet, as opposed to
// one whose runtime this host lacks.
type notMeasuredError struct{ reason string }

func (e *notMeasuredError) Error() string { return e.reason }

// benchEnv is what every row shares: the image, the request and the
// stdout it must print, and the image imported into Docker.
type benchEnv struct {
	img   *image.Image
	store string
	req   sandbox.Request
	want  *string
	// dockerRef is the image imported into Docker, or dockerErr why it
	// could not be; dockerTried is set once the import was tried.
	dockerRef   string
	dockerErr   error
	dockerTried bool
}

// benchRuntimeRows returns the rows for runtimes: the baselines first,
// then each runtime's cold, pooled (called directly, then through the
// API) and session rows.
func benchRuntimeRows(runtimes []string) []benchRowSpec {
	rows := []benchRowSpec{
		{runtimeBaseline, pathBare, openBare},
		{runtimeBaseline, pathDockerRun, openDockerRun(runtimeDocker)},
		{runtimeBaseline, pathDockerRunRunsc, openDockerRun(runtimeGVisor)},
	}
	for _, n := range runtimes {
		if n == runtimeNative {
			rows = append(rows, benchRowSpec{n, pathCold, openNativeCold}, benchRowSpec{n, pathPooled, pooledDirect(nativePooled)},
				benchRowSpec{n, pathPooledAPI, pooledAPI(nativePooled)}, benchRowSpec{n, pathSession, openNativeSession})
			continue
		}
		rows = append(rows, benchRowSpec{n, pathCold, openDockerCold(n)}, benchRowSpec{n, pathPooled, pooledDirect(dockerPooled(n))},
			benchRowSpec{n, pathPooledAPI, pooledAPI(dockerPooled(n))}, benchRowSpec{n, pathSession, openDockerSession(n)})
	}
	return rows
}

// openBare is the image's interpreter run cold, chrooted into its root
// filesystem, without a sandbox (bareCall).
func openBare(_ context.Context, e *benchEnv) (*benchSubject, error) {
	return &benchSubject{
		detail: fmt.Sprintf("chroot %s %s %s %q", e.img.RootFS, lang.For(e.req.Language).Interpreter, bareCodeFlag[e.req.Language], e.req.Code),
		call:   bareCall(e.img.RootFS, e.req, e.want),
		close:  func() {},
	}, nil
}

// nativeRuntime starts a native runtime on the image, adjusted.
func nativeRuntime(e *benchEnv, adjust func(*linux.Options)) (*linux.Runtime, error) {
	root, err := resolveRoot("", e.img.Name, e.store)
	if err != nil {
		return nil, err
	}
	opts := linux.Options{RootFS: root.RootFS, ImageDigest: root.Digest, Env: root.Env, TmpSeed: root.TmpSeed}
	if adjust != nil {
		adjust(&opts)
	}
	return linux.New(opts)
}

// openNativeCold is a native runtime that keeps nothing ready: each run
// builds its sandbox.
func openNativeCold(_ context.Context, e *benchEnv) (*benchSubject, error) {
	rt, err := nativeRuntime(e, nil)
	if err != nil {
		return nil, err
	}
	return &benchSubject{detail: "a sandbox built for the run", call: directCall(rt, e.req, e.want), close: func() { rt.Close() }}, nil
}

// openNativeSession is a cell of a native session.
func openNativeSession(ctx context.Context, e *benchEnv) (*benchSubject, error) {
	rt, err := nativeRuntime(e, nil)
	if err != nil {
		return nil, err
	}
	s, err := sessionSubject(ctx, rt, e)
	if err != nil {
		rt.Close()
		return nil, err
	}
	closeSession := s.close
	s.close = func() { closeSession(); rt.Close() }
	return s, nil
}

// sessionSubject opens a Python session on sr, whose cells are the row's
// runs; closing the subject closes the session.
func sessionSubject(ctx context.Context, sr sandbox.SessionRuntime, e *benchEnv) (*benchSubject, error) {
	sess, err := sr.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	if err != nil {
		return nil, err
	}
	return &benchSubject{
		detail: "a cell of a session opened beforehand",
		call: func(ctx context.Context) outcome {
			ctx, cancel := context.WithTimeout(ctx, benchRequestTimeout)
			defer cancel()
			res, err := sess.Exec(ctx, sandbox.Cell{Code: e.req.Code})
			if err != nil {
				return outcome{err: err}
			}
			return resultOutcome(res, e.want)
		},
		close: func() { sess.Close() },
	}, nil
}

// waitUntil polls ready until it holds, at most benchPoolWait.
func waitUntil(ctx context.Context, ready func() bool) {
	deadline := time.Now().Add(benchPoolWait)
	for ctx.Err() == nil && time.Now().Before(deadline) && !ready() {
		time.Sleep(10 * time.Millisecond)
	}
}

// isNotMeasured reports whether err is a row the runtime cannot measure
// yet, and why.
func isNotMeasured(err error) (string, bool) {
	var nm *notMeasuredError
	if errors.As(err, &nm) {
		return nm.reason, true
	}
	return "", false
}

// oneLine flattens an error's text onto one line for the table.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
