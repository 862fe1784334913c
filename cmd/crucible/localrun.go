package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
)

// execute runs req where it is fastest: with the native runtime, on the
// local `crucible serve` (localsocket.go) when one of this user's listens
// and has the root filesystem the flags ask for, else in a sandbox of its
// own, of the runtime --runtime chooses. Either way the result is the
// same. An error that is an exitCodeError was reported already (a bad
// flag, a host that cannot run sandboxes).
func (f *runFlags) execute(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	if key, ok := f.delegable(req); ok {
		if conn := dialServe(socketPath()); conn != nil {
			if res, served, err := runOnServe(ctx, conn, key, req); served {
				return res, err
			}
		}
	}
	rt, err := f.runtime.start(ctx, f.rootfs, f.image, f.store, runtimeSettings{})
	if err != nil {
		return sandbox.Result{}, err
	}
	defer rt.close()
	svc, err := localService(rt)
	if err != nil {
		return sandbox.Result{}, err
	}
	answer, err := svc.Run(ctx, server.DefaultTenant, req, service.RunOptions{})
	return answer.Result, err
}

// delegable reports whether req may be sent to a server, and the key of
// the runtime it needs: only with the native runtime, not with --local or
// $CRUCIBLE_LOCAL, nor with flags that do not name a runtime (the local
// path reports those), nor past maxDelegatedPayload.
func (f *runFlags) delegable(req sandbox.Request) (runtimeKey, bool) {
	if f.runtime.onDocker() || f.local || (os.Getenv(localEnv) != "" && os.Getenv(localEnv) != "0") {
		return runtimeKey{}, false
	}
	payload := len(req.Code) + len(req.Stdin)
	for _, file := range req.Files {
		payload += len(file.Content)
	}
	if payload > maxDelegatedPayload {
		return runtimeKey{}, false
	}
	root, err := resolveRoot(f.rootfs, f.image, f.store)
	if err != nil {
		return runtimeKey{}, false
	}
	key, err := newRuntimeKey(root.RootFS, root.Digest, f.store)
	return key, err == nil
}

// dialServe connects to the server listening on the local socket path, or
// returns nil when there is none, or when the socket or the process
// listening on it is another user's.
func dialServe(path string) *net.UnixConn {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket {
		return nil
	}
	if uid, ok := fileOwnerUID(fi); !ok || uid != os.Geteuid() {
		return nil
	}
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil
	}
	if samePeer(conn) != nil {
		conn.Close()
		return nil
	}
	return conn
}

// runOnServe sends req to the server on conn and returns how it ended,
// passing its output to req.OnOutput as it comes. served is false when the
// server refused the run or went away before any output: the caller then
// runs it itself (a run leaves nothing behind but its output, so running
// it again shows the same). Cancelling ctx cancels the run on the server,
// which still reports how it ended.
func runOnServe(ctx context.Context, conn *net.UnixConn, key runtimeKey, req sandbox.Request) (res sandbox.Result, served bool, err error) {
	defer conn.Close()
	if err := json.NewEncoder(conn).Encode(localRunRequest{Runtime: key, Request: req}); err != nil {
		return res, false, nil
	}
	defer context.AfterFunc(ctx, func() { _ = conn.CloseWrite() })()
	dec := json.NewDecoder(conn)
	shown := false
	for {
		var fr localRunFrame
		if err := dec.Decode(&fr); err != nil {
			if !shown {
				return res, false, nil
			}
			res = sandbox.Result{Status: sandbox.StatusInternal, ExitCode: -1, Language: req.Language,
				Reason: "the local crucible serve went away during the run: " + err.Error()}
			return res, true, &sandbox.PlatformError{Op: "run on the local crucible serve", Err: err}
		}
		switch {
		case fr.Refused != "":
			return res, false, nil
		case fr.Output != nil:
			shown = true
			if req.OnOutput != nil {
				req.OnOutput(fr.Output.Stream, fr.Output.Data)
			}
		case fr.Result != nil:
			switch {
			case fr.InputError != nil:
				err = fr.InputError
			case fr.Error != "":
				err = errors.New(fr.Error)
			}
			return *fr.Result, true, err
		}
	}
}
