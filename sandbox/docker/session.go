package docker

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// Session is a live Python interpreter, the same kernel as the native
// runtime's sessions (package kernel), in a container of its own with the
// hardening of a run's (container.go), for as long as the session lives.
// It implements sandbox.Session.
//
// The kernel runs in an exec beside the container's waiting process,
// under a small multiplexer (sessionmux.py) that carries the kernel's
// request and reply channels, stdout and stderr over the exec's one
// ordered stream; the host side of the protocol is package kernel's, as
// for the native runtime. Files go through the daemon's archive API, one
// operation at a time and after any running cell (sessionfiles.go).
//
// Security, as in the native runtime: the session's processes run only
// while a cell runs and for at most idleStopAfter after it; then the
// container is paused (the cgroup freezer, or runsc's pause) until the next
// cell or file operation, so that what a cell leaves behind can neither
// use CPU nor write while no cell runs, and the file operations, which
// check the path they use first, cannot be raced. A reply is taken only
// for the cell it answers (its id and token); any other ends the session.
// What the host decides itself: the status of a cell stopped at a limit,
// the metrics (from the daemon's statistics), which output belongs to
// which cell (by order on the stream), and what the files are.
type Session struct {
	rt  *Runtime
	id  string
	cid string // the container's
	uid int
	lim sandbox.Limits
	env map[string]string
	// readOnly are the read-only input files; locked, the directories
	// holding one: neither can be written (sessionfiles.go).
	readOnly, locked map[string]bool
	out              *cellOutput
	// work is /work's content after the last cell or file operation; nil
	// when unknown. Guarded by cellMu.
	work workSnapshot
	// workDigest is the multiplexer's digest of /work when work was read
	// ("": unknown). Guarded by cellMu.
	workDigest string
	cg         *hostCgroup  // nil: the daemon's statistics
	ooms       atomic.Int64 // OOM events the daemon reported
	oomsTaken  atomic.Int64 // those a restart answered
	stopEvents context.CancelFunc

	life atomic.Pointer[kernelLife]
	done chan struct{}
	end  sync.Once

	cellMu sync.Mutex // one cell, or one file operation, at a time
	cells  int
	// billedCPU is the container's CPU time (ns) when the last cell was
	// billed: the next cell's count starts there. Guarded by cellMu.
	billedCPU int64
	idle      *time.Timer
	paused    bool

	lifeMu  sync.RWMutex // Close excludes every other use
	closed  bool
	closing atomic.Bool
}

var _ sandbox.Session = (*Session)(nil)
var _ sandbox.SessionRuntime = (*Runtime)(nil)

// SessionLabel is the label naming the session a container runs (its
// value is the session's ID), beside the label every container of the
// package has: `docker ps --filter label=org.crucible.session=ID` finds it.
const SessionLabel = "org.crucible.session"

// NewSession starts a Python kernel in a fresh container; see
// sandbox.SessionRuntime.
func (r *Runtime) NewSession(ctx context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	lim := req.Limits.WithSessionDefaults()
	uid, err := r.uids.Take()
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "allocate uid", Err: err}
	}
	s := &Session{rt: r, id: ids.New(ids.Session), uid: uid, lim: lim, env: req.Env, out: &cellOutput{},
		readOnly: map[string]bool{}, locked: map[string]bool{}, done: make(chan struct{})}
	for _, f := range req.Files {
		if f.ReadOnly {
			s.readOnly[f.Name] = true
			for d := path.Dir(f.Name); d != "."; d = path.Dir(d) {
				s.locked[d] = true
			}
		}
	}
	if err := s.start(ctx, req.Files); err != nil {
		s.destroy()
		return nil, err
	}
	return s, nil
}

// start creates the container, places the kernel, the multiplexer and the
// input files, and starts the kernel.
func (s *Session) start(ctx context.Context, files []sandbox.File) error {
	setup, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	cfg := s.rt.containerConfig(false)
	cfg.Labels[SessionLabel] = s.id
	hc := s.rt.sessionHostConfig(s.lim)
	if s.rt.ociRuntime == RuncRuntime {
		// The kernel's view as a run's (startContainer); gVisor makes up
		// its own.
		kv, err := s.rt.kernelViewMounts(setup, s.lim.MemoryBytes)
		if err != nil {
			return &sandbox.PlatformError{Op: "kernel view", Err: err}
		}
		hc.Mounts = append(hc.Mounts, kv...)
	}
	created, err := s.rt.cli.ContainerCreate(setup, cfg, hc, nil, nil, "")
	if err != nil {
		return &sandbox.PlatformError{Op: "create container", Err: err}
	}
	s.cid = created.ID
	s.watchEvents()
	if err := s.rt.cli.ContainerStart(setup, s.cid, container.StartOptions{}); err != nil {
		return &sandbox.PlatformError{Op: "start container", Err: err}
	}
	// Socket buffers within the session's memory, as a run's (sockmem.go).
	cg, err := s.rt.localCgroups(setup, s.cid)
	if err != nil {
		return &sandbox.PlatformError{Op: "container cgroups", Err: err}
	}
	if err := limitSocketMemory(cg, s.lim.MemoryBytes); err != nil {
		return &sandbox.PlatformError{Op: "socket memory limit", Err: err}
	}
	code, err := kernelArchive()
	if err != nil {
		return &sandbox.PlatformError{Op: "kernel files", Err: err}
	}
	if err := s.rt.cli.CopyToContainer(setup, s.cid, lang.CodeDir, bytes.NewReader(code), container.CopyToContainerOptions{}); err != nil {
		return &sandbox.PlatformError{Op: "copy kernel files", Err: err}
	}
	if len(files) > 0 {
		tarball, err := filesArchive(files, s.uid)
		if err != nil {
			return &sandbox.PlatformError{Op: "input files", Err: err}
		}
		if err := s.rt.cli.CopyToContainer(setup, s.cid, lang.WorkDir, bytes.NewReader(tarball), container.CopyToContainerOptions{}); err != nil {
			return &sandbox.PlatformError{Op: "copy input files", Err: err}
		}
	}
	if s.work, _, err = s.scanWork(setup, nil, nil); err != nil {
		return &sandbox.PlatformError{Op: "read the working directory", Err: err}
	}
	l, err := s.startKernel(ctx)
	if err != nil {
		return err
	}
	s.life.Store(l)
	if ins, err := s.rt.cli.ContainerInspect(setup, s.cid); err == nil && ins.State != nil {
		s.cg = findHostCgroup(ins.State.Pid)
	}
	s.billedCPU, _, _ = s.usage(setup)
	return nil
}

// kernelArchive is the tar of the kernel and the multiplexer for /code,
// root's and read-only.
func kernelArchive() ([]byte, error) {
	return codeFiles(map[string]string{path.Base(kernel.PythonPath): kernel.PythonSource(), path.Base(muxPath): muxSource})
}

// sessionHostConfig is a run's host configuration (hostConfig) with the
// session's limits, less the per-process CPU-time rlimit: the kernel lives
// across cells, and a cell's CPU-time limit is the cell's own, enforced
// from the container's CPU time (as the native runtime's sessions do from
// their cgroup's).
func (r *Runtime) sessionHostConfig(lim sandbox.Limits) *container.HostConfig {
	hc := r.hostConfig(lim)
	kept := hc.Ulimits[:0]
	for _, u := range hc.Ulimits {
		if u.Name != "cpu" {
			kept = append(kept, u)
		}
	}
	hc.Ulimits = kept
	return hc
}

// watchEvents counts the OOM kills the daemon reports in the container,
// from its creation to the session's end: a kernel that died of SIGKILL
// ran out of memory only if the count grew meanwhile. When the container
// dies, the kernel's stream is ended killGrace later if it has not ended
// by itself (under gVisor it may not).
func (s *Session) watchEvents() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopEvents = cancel
	msgs, errs := s.rt.cli.Events(ctx, events.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", "container"), filters.Arg("container", s.cid), filters.Arg("event", "oom"), filters.Arg("event", "die"))})
	go func() {
		for {
			select {
			case m := <-msgs:
				switch m.Action {
				case events.ActionOOM:
					s.ooms.Add(1)
				case events.ActionDie:
					time.AfterFunc(killGrace, func() {
						if l := s.life.Load(); l != nil {
							l.stop()
						}
					})
				}
			case <-errs:
				return
			}
		}
	}()
}

// ID names the session.
func (s *Session) ID() string { return s.id }

// Done is closed once the session has ended: closed, or its interpreter
// exited without a restart.
func (s *Session) Done() <-chan struct{} { return s.done }

// finish marks the session ended.
func (s *Session) finish() { s.end.Do(func() { close(s.done) }) }

// errInterpreterExited is why a session whose interpreter exited for good
// refuses every operation.
var errInterpreterExited = fmt.Errorf("%w: its interpreter has exited", sandbox.ErrSessionClosed)

// use guards an operation against Close.
func (s *Session) use() (release func(), err error) {
	s.lifeMu.RLock()
	if s.closed {
		s.lifeMu.RUnlock()
		return nil, sandbox.ErrSessionClosed
	}
	select {
	case <-s.done:
		s.lifeMu.RUnlock()
		return nil, errInterpreterExited
	default:
	}
	return s.lifeMu.RUnlock, nil
}

// kill kills the container: every process of the session ends, the
// kernel's stream with it.
func (s *Session) kill() {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	_ = s.rt.cli.ContainerKill(ctx, s.cid, "KILL")
	// Under gVisor the stream may outlive the container: ended here.
	time.AfterFunc(killGrace, func() {
		if l := s.life.Load(); l != nil {
			l.stop()
		}
	})
}

// Close ends the session: the container, its processes and its volumes
// are removed. A cell running meanwhile returns with StatusKilled.
func (s *Session) Close() error {
	// The stream first: a running cell holds the session until it
	// returns, and it returns as soon as its kernel's stream has ended.
	s.closing.Store(true)
	if l := s.life.Load(); l != nil {
		l.stop()
	}
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.destroy()
}

// destroy removes the container with its volumes, whatever state it is
// in, and returns the uid.
func (s *Session) destroy() error {
	defer s.finish()
	if s.stopEvents != nil {
		defer s.stopEvents()
	}
	if s.cid == "" {
		s.rt.uids.Give(s.uid)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	// A paused container is let go first: its processes die of SIGKILL
	// only once thawed.
	_ = s.rt.cli.ContainerUnpause(ctx, s.cid)
	err := s.rt.cli.ContainerRemove(ctx, s.cid, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if l := s.life.Load(); l != nil {
		l.stop()
	}
	if err != nil {
		return &sandbox.PlatformError{Op: "remove container", Err: err}
	}
	s.rt.uids.Give(s.uid)
	return nil
}
