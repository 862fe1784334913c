package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
)

// localRequestTimeout bounds how long a caller of the local socket may
// take to send its request.
const localRequestTimeout = 30 * time.Second

// localServer serves `crucible run` on the local socket (localsocket.go)
// with the runtimes of `crucible serve`: for each, a service like the one
// the command would build (localService: no record, no redaction, the
// image's hints).
type localServer struct {
	ln       *net.UnixListener
	services map[runtimeKey]*service.Service
	log      *slog.Logger

	accepted chan struct{} // closed when accept has returned
	mu       sync.Mutex
	conns    map[*net.UnixConn]struct{}
	handlers sync.WaitGroup
}

// startLocalServer listens on path for `crucible run` and serves the
// images (started from f's flags) there until close. It returns nil, and
// logs why, when it cannot: the API is served all the same, and `crucible
// run` runs locally. A server of the docker or gvisor runtime serves no
// local runs: `crucible run` asks for a root filesystem, not a runtime,
// and must get the native runtime it asked for.
func startLocalServer(path string, images []servedImage, f *serveFlags, log *slog.Logger) *localServer {
	if path == "" {
		return nil
	}
	if f.runtime.onDocker() {
		log.Info("crucible run sends no runs to this server: it serves the " + f.runtime.name + " runtime, crucible run the native one")
		return nil
	}
	ls := &localServer{services: map[runtimeKey]*service.Service{}, conns: map[*net.UnixConn]struct{}{}, log: log,
		accepted: make(chan struct{})}
	for _, img := range images {
		key, err := servedKey(img.Name, f)
		if err == nil {
			var svc *service.Service
			if svc, err = newLocalRunService(img); err == nil {
				ls.services[key] = svc
			}
		}
		if err != nil {
			log.Warn("crucible run cannot use this server", "image", img.Name, "err", err)
		}
	}
	ln, err := listenLocal(path)
	if err != nil {
		log.Warn("crucible run cannot use this server: no local socket", "socket", path, "err", err)
		ls.shutdownServices(context.Background())
		return nil
	}
	ls.ln = ln
	go ls.accept()
	log.Info("serving crucible run on the local socket, for this user only", "socket", path)
	return ls
}

// servedKey is the runtimeKey of the served image name, as `crucible run`
// computes it from the same --rootfs, --image and --store.
func servedKey(name string, f *serveFlags) (runtimeKey, error) {
	rootfs, built := f.rootfs, name
	if name == image.Host || name == rootfsImage {
		built = ""
	}
	root, err := resolveRoot(rootfs, built, f.store)
	if err != nil {
		return runtimeKey{}, err
	}
	return newRuntimeKey(root.RootFS, root.Digest, f.store)
}

// newLocalRunService is the service of the runs `crucible run` sends for
// img. It logs nothing of its own: localService's logger writes warnings
// to this process's stderr, the server's log.
func newLocalRunService(img servedImage) (*service.Service, error) {
	svc, err := localService(img.rt)
	if err != nil { // localService reported it on stderr
		return nil, errors.New("the local run service could not start")
	}
	return svc, nil
}

// listenLocal listens on the unix socket path, mode 0600, creating its
// directory (0755) if missing. A socket file no server answers on (left by
// one that died) is replaced; one a server answers on is left to it.
func listenLocal(path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket; not replaced", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("another crucible serve listens on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// Until this chmod another user could connect: handle refuses any
	// caller not of this user, whatever the file's mode.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// accept serves each connection until the listener is closed.
func (ls *localServer) accept() {
	defer close(ls.accepted)
	for {
		conn, err := ls.ln.AcceptUnix()
		if err != nil {
			return
		}
		ls.mu.Lock()
		ls.conns[conn] = struct{}{}
		ls.handlers.Add(1)
		ls.mu.Unlock()
		go func() {
			defer ls.handlers.Done()
			ls.handle(conn)
			ls.mu.Lock()
			delete(ls.conns, conn)
			ls.mu.Unlock()
			conn.Close()
		}()
	}
}

// handle serves one run: it reads the request, runs it, and writes its
// output and outcome as frames. The run is cancelled when the caller
// half-closes the connection or goes away.
func (ls *localServer) handle(conn *net.UnixConn) {
	if err := samePeer(conn); err != nil {
		ls.log.Warn("local socket: caller refused", "err", err)
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(localRequestTimeout))
	var lr localRunRequest
	if err := json.NewDecoder(io.LimitReader(conn, maxLocalRequestBytes)).Decode(&lr); err != nil {
		ls.log.Warn("local socket: unreadable request", "err", err)
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	enc := json.NewEncoder(conn)
	svc := ls.services[lr.Runtime]
	if svc == nil {
		_ = enc.Encode(localRunFrame{Refused: "this server has no runtime for that root filesystem and image"})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// The caller sends nothing more: end-of-file (or an error, the
		// connection closed) is its cancellation.
		_, _ = io.Copy(io.Discard, conn)
		cancel()
	}()
	// The run never waits on the caller: output is queued (bounded by the
	// run's output limit) and written out by the queue's own goroutine.
	live := newLiveOutput(func(stderr bool, data []byte) {
		s := sandbox.StreamStdout
		if stderr {
			s = sandbox.StreamStderr
		}
		_ = enc.Encode(localRunFrame{Output: &localOutput{Stream: s, Data: data}})
	})
	lr.Request.OnOutput = live.output
	answer, err := svc.Run(ctx, server.DefaultTenant, lr.Request, service.RunOptions{})
	live.close()
	_ = enc.Encode(outcomeFrame(answer.Result, err))
}

// outcomeFrame is the last frame of an answer: the run's result and the
// service's error. A run the service turned away before it started (its
// queue full, shutting down) is refused instead: the command runs it
// itself, as it would have without this server.
func outcomeFrame(res sandbox.Result, err error) localRunFrame {
	var ie *sandbox.InputError
	var se *service.Error
	switch {
	case errors.As(err, &se) && (se.Kind == service.KindBusy || se.Kind == service.KindUnavailable):
		return localRunFrame{Refused: se.Message}
	case errors.As(err, &ie):
		return localRunFrame{Result: &res, InputError: ie}
	case err != nil:
		return localRunFrame{Result: &res, Error: err.Error()}
	}
	return localRunFrame{Result: &res}
}

// close stops accepting, lets the runs in progress end until ctx ends
// (then kills them), and waits for their outcomes to be sent, or, for a
// caller that stopped reading, until ctx ends.
func (ls *localServer) close(ctx context.Context) {
	if ls == nil {
		return
	}
	ls.ln.Close()
	<-ls.accepted
	ls.shutdownServices(ctx)
	handled := make(chan struct{})
	go func() {
		ls.handlers.Wait()
		close(handled)
	}()
	select {
	case <-handled:
		return
	case <-ctx.Done():
	}
	ls.mu.Lock()
	for conn := range ls.conns {
		conn.Close()
	}
	ls.mu.Unlock()
	<-handled
}

// shutdownServices shuts the local services down (see service.Shutdown).
func (ls *localServer) shutdownServices(ctx context.Context) {
	for _, svc := range ls.services {
		if err := svc.Shutdown(ctx); err != nil {
			ls.log.Warn("local socket: runs killed at shutdown", "err", err)
		}
	}
}
