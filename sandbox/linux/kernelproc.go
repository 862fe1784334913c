package linux

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// kernelProc is a sandbox whose program is a kernel, once it has greeted.
type kernelProc struct {
	pid       int // the kernel's pid, seen from the host
	replies   *replyChannel
	preloaded []string
	// prefaulted is what a zygote said of its forks (kernel.Ready).
	prefaulted int
}

// replyChannel is the host's side of a kernel's reply channel, once the
// kernel has greeted.
type replyChannel struct {
	// replies has each reply as it is read; it is closed when the channel
	// breaks: at end-of-file, or at a line that is not a reply.
	replies <-chan kernel.Reply
	// err says why the channel broke; read it only once replies is
	// closed.
	err error
}

// kernelMode is what a kernel will serve.
type kernelMode int

const (
	// sessionKernel serves a session's cells.
	sessionKernel kernelMode = iota
	// statelessKernel serves one stateless run, in a warm sandbox: it
	// imports only what that needs, leaving the modules cells use unloaded.
	statelessKernel
	// warmSessionKernel serves a session's cells once a session takes it
	// from the warm pool: it starts with the largest rlimits a session may
	// have, which the session's setup lowers (see setupKernel).
	warmSessionKernel
	// zygoteKernel serves the stateless runs of a zygote slot, each in a
	// fork of itself (zygote.go).
	zygoteKernel
	// coldKernel serves the one stateless run its cold sandbox was built
	// for (bootForRun): it starts with that run's own rlimits, the
	// process limit included, exactly as `python3 /code/main.py` would.
	coldKernel
)

// bootKernel turns a ready sandbox into a running Python kernel: it sends
// the kernel program with the channel, waits for the program to start,
// moves init out of the run's cgroup, and waits for the kernel's greeting.
// It does not consume events after the start: the caller watches p.events
// for the kernel's exit.
func (r *Runtime) bootKernel(ctx context.Context, p *sandboxProc, lim sandbox.Limits, env map[string]string, files []sandbox.File, mode kernelMode, preload []string) (*kernelProc, error) {
	argv := []string{lang.For(sandbox.Python).Interpreter, kernel.PythonPath}
	processes, fileSize, openFiles := lim.Processes, lim.FileSizeBytes, lim.OpenFiles
	zygoteUID := 0
	switch mode {
	case zygoteKernel:
		argv = append(argv, "--zygote", fmt.Sprintf("%d:%d", p.zygote.uid, p.uid))
		zygoteUID = p.zygote.uid
		// As a warm interpreter's, and its forks lower them.
		processes = sandbox.MaxLimits().Processes
	case statelessKernel, coldKernel:
		argv = append(argv, "--stateless")
		if mode == statelessKernel {
			// A warm interpreter cannot raise RLIMIT_NPROC for the run it
			// gets, and that run may have any process limit a request may
			// ask: the rlimit is the largest, the cgroup's pids limit (set
			// per run, see takeWarm) the exact one.
			processes = sandbox.MaxLimits().Processes
		}
	case warmSessionKernel:
		// Nor can a warm session's kernel raise any rlimit: it starts
		// with the largest and lowers them to its session's exactly.
		top := warmSessionRlimits()
		processes, fileSize, openFiles = top.Processes, top.FileSizeBytes, top.OpenFiles
	}
	if len(preload) > 0 {
		argv = append(argv, "--preload", strings.Join(preload, ","))
	}
	cfg := &sandboxinit.RunConfig{
		MainPath:      kernel.PythonPath,
		Code:          kernel.PythonSource(),
		Argv:          argv,
		Env:           lang.Environ(sandbox.Python, r.env, env),
		Dir:           lang.WorkDir,
		DiskBytes:     lim.DiskBytes,
		MemoryBytes:   lim.MemoryBytes,
		FileSizeBytes: uint64(fileSize),
		OpenFiles:     uint64(openFiles),
		Processes:     uint64(processes),
		Channel:       true,
		ZygoteUID:     zygoteUID,
		// A session's kernel is started again after a cell ran out of
		// memory (Session.restart).
		Restartable: mode == sessionKernel || mode == warmSessionKernel,
	}
	var contents [][]byte
	cfg.Files, contents = inputFiles(files)
	if err := p.armPids(lim.Processes); err != nil {
		return nil, &sandbox.PlatformError{Op: "start kernel", Err: err}
	}
	go func() {
		_ = sandboxinit.WriteMessage(p.config, cfg, contents)
		if mode != zygoteKernel && !cfg.Restartable { // a zygote's init takes Reset requests on it, a session's Restart
			p.config.Close()
		}
	}()
	deadline := time.NewTimer(setupTimeout)
	defer deadline.Stop()
	for started := false; !started; {
		select {
		case ev, ok := <-p.events:
			switch {
			case !ok:
				return nil, &sandbox.PlatformError{Op: "start kernel", Err: errors.New("sandbox init ended")}
			case ev.Phase == sandboxinit.PhaseFailed:
				return nil, &sandbox.PlatformError{Op: "start kernel", Err: errors.New(ev.Error)}
			case ev.Phase == sandboxinit.PhaseStarted:
				started = true
			}
		case <-deadline.C:
			return nil, &sandbox.PlatformError{Op: "start kernel", Err: fmt.Errorf("no start within %s", setupTimeout)}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	x := &execution{p: p, lim: lim}
	if err := x.leaveCgroup(); err != nil {
		return nil, &sandbox.PlatformError{Op: "start kernel", Err: err}
	}
	return awaitGreeting(ctx, p, deadline)
}

// awaitGreeting starts reading the replies of the kernel just started in
// p, and waits for its greeting until deadline fires.
func awaitGreeting(ctx context.Context, p *sandboxProc, deadline *time.Timer) (*kernelProc, error) {
	replies := make(chan kernel.Reply, 1)
	ready := make(chan kernel.Ready, 1)
	rc := &replyChannel{replies: replies}
	go rc.read(p, ready, replies)
	var k kernelProc
	select {
	case hello, ok := <-ready:
		if !ok {
			return nil, &sandbox.PlatformError{Op: "start kernel", Err: errors.New("the kernel exited before it was ready")}
		}
		k.preloaded, k.prefaulted = hello.Preloaded, hello.Prefaulted
	case <-deadline.C:
		return nil, &sandbox.PlatformError{Op: "start kernel", Err: fmt.Errorf("the kernel did not start within %s", setupTimeout)}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var err error
	if k.pid, err = childOf(p.cmd.Process.Pid); err != nil {
		return nil, &sandbox.PlatformError{Op: "find kernel", Err: err}
	}
	k.replies = rc
	return &k, nil
}

// maxReplyBytes bounds one kernel reply (kernel.MaxReplyBytes).
const maxReplyBytes = kernel.MaxReplyBytes

// read decodes the kernel's messages: the greeting, then replies, until
// the channel breaks (see kernel.ReadChannel, which every runtime's
// sessions share).
func (rc *replyChannel) read(p *sandboxProc, ready chan<- kernel.Ready, replies chan<- kernel.Reply) {
	defer close(replies)
	rc.err = kernel.ReadChannel(p.fromKernel, ready, replies)
}

// errRepliesClosed is why a reply channel breaks at end-of-file: the
// kernel closed it, most often by exiting.
var errRepliesClosed = kernel.ErrChannelClosed
