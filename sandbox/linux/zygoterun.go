package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	units "github.com/docker/go-units"
	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// runZygote serves x's request with a fork of the zygote of slot p (see
// zygote.go), taken at t0, and fills x.res. An error is a platform
// failure. The slot is reset and given back to its pool (or retired)
// after the result is known, off the caller's path.
func (x *execution) runZygote(ctx context.Context, p *sandboxProc, t0 time.Time) (err error) {
	x.p = p
	cg, err := newRunCgroup(runCgroupName(), cgroupLimits{MemoryBytes: x.lim.MemoryBytes, Pids: x.lim.Processes})
	if err != nil {
		_ = x.rt.warm.discard(p)
		return &sandbox.PlatformError{Op: "prepare the run's cgroup", Err: err}
	}
	x.runCg = cg
	x.killRun = func() { _ = cg.kill() }
	var anomaly error // the slot must not serve another run
	defer func() {
		if err != nil {
			anomaly = err
		}
		go x.rt.recycleZygote(p, cg, anomaly)
	}()
	acquired := time.Now()
	if err := x.placeProgram(); err != nil {
		return &sandbox.PlatformError{Op: "start program in zygote slot", Err: err}
	}
	stdio, err := x.forkRun()
	if err != nil {
		return &sandbox.PlatformError{Op: "start program in zygote slot", Err: err}
	}
	started := time.Now()

	var workers sync.WaitGroup
	workers.Go(func() {
		_, _ = stdio[0].Write(x.req.Stdin)
		stdio[0].Close()
	})
	capture := &outputCap{remaining: x.lim.OutputBytes, out: newSerialOutput(x.req.OnOutput)}
	capture.onLimit = func() {
		x.stopWith(sandbox.StatusOutputLimit, "output limit of "+units.BytesSize(float64(x.lim.OutputBytes))+" reached")
	}
	var outs [2]capturedStream
	workers.Go(func() { capture.drain(stdio[1], sandbox.StreamStdout, &outs[0]); stdio[1].Close() })
	workers.Go(func() { capture.drain(stdio[2], sandbox.StreamStderr, &outs[1]); stdio[2].Close() })

	ws, serr := x.superviseFork(ctx)
	ended := time.Now()
	// Whatever the program left running ends now, before its files are
	// read; that anything was left retires the slot.
	if n, err := cg.pidsCurrent(); err != nil || n > 0 {
		anomaly = fmt.Errorf("%d processes left running after the program ended (%v)", n, err)
		_ = cg.kill()
	}
	workers.Wait()
	if serr != nil {
		return &sandbox.PlatformError{Op: "run in zygote slot", Err: serr}
	}
	last := sandboxinit.Event{Phase: sandboxinit.PhaseExited, ExitCode: ws.ExitStatus()}
	if ws.Signaled() {
		last.Signal = int(ws.Signal())
	}
	res := x.res
	if x.stop.status == "" {
		if err := x.collectArtifacts(ctx); err != nil {
			return err
		}
	}
	res.Metrics.QueueMS = ms(acquired.Sub(t0))
	res.Metrics.StartMS = ms(started.Sub(acquired))
	res.Metrics.WallMS = ms(ended.Sub(started))
	if err := x.finish(last, outs); err != nil {
		return err
	}
	if res.Status == sandbox.StatusMemoryLimit {
		anomaly = errors.New("the run was OOM-killed")
	}
	return nil
}

// forkRun has the zygote fork the run, moves the child into the run's
// cgroup and lets it start. It returns the host's ends of the run's
// stdin, stdout and stderr.
func (x *execution) forkRun() ([3]*os.File, error) {
	var host [3]*os.File
	pipes, err := newPipes(4) // stdin, stdout, stderr, gate
	if err != nil {
		return host, err
	}
	theirs := []*os.File{pipes[0].r, pipes[1].w, pipes[2].w, pipes[3].r}
	mine := []*os.File{pipes[0].w, pipes[1].r, pipes[2].r, pipes[3].w}
	fail := func(err error) ([3]*os.File, error) {
		for _, f := range mine {
			f.Close()
		}
		return host, err
	}
	msg, err := x.kernelRun("")
	if err != nil {
		return fail(err)
	}
	fds := make([]int, len(theirs))
	for i, f := range theirs {
		fds[i] = int(f.Fd())
	}
	err = unix.Sendmsg(int(x.p.toKernel.Fd()), msg, unix.UnixRights(fds...), nil, 0)
	for _, f := range theirs {
		f.Close()
	}
	if err != nil {
		return fail(fmt.Errorf("send the run to the zygote: %w", err))
	}
	pid, err := x.awaitFork()
	if err != nil {
		return fail(err)
	}
	child, err := zygoteChild(x.p.zygote.pid, pid)
	if err != nil {
		return fail(err)
	}
	if err := x.runCg.add(child); err != nil {
		return fail(fmt.Errorf("move the run into its cgroup: %w", err))
	}
	if _, err := pipes[3].w.Write([]byte("1")); err != nil {
		return fail(fmt.Errorf("start the run: %w", err))
	}
	pipes[3].w.Close()
	return [3]*os.File{pipes[0].w, pipes[1].r, pipes[2].r}, nil
}

// awaitFork waits for the zygote to report the fork, returning the
// child's pid in the sandbox.
func (x *execution) awaitFork() (int, error) {
	timer := time.NewTimer(setupTimeout)
	defer timer.Stop()
	select {
	case rep, ok := <-x.p.kernel.replies.replies:
		switch {
		case !ok:
			return 0, fmt.Errorf("the zygote's channel broke: %v", x.p.kernel.replies.err)
		case rep.Fork == nil || rep.Fork.Pid <= 0:
			return 0, fmt.Errorf("the zygote did not fork: %+v", rep.Error)
		}
		return rep.Fork.Pid, nil
	case <-timer.C:
		return 0, fmt.Errorf("the zygote did not fork within %s", setupTimeout)
	}
}

// superviseFork enforces the wall-time and CPU-time limits and
// cancellation until the zygote reports the run's end, and returns the
// child's wait status.
func (x *execution) superviseFork(ctx context.Context) (syscall.WaitStatus, error) {
	deadline := time.NewTimer(x.lim.WallTime())
	defer deadline.Stop()
	ticker := time.NewTicker(cpuPollInterval)
	defer ticker.Stop()
	done := ctx.Done()
	var stuck <-chan time.Time // once the run is killed, how long the zygote may take to say so
	stop := func(status sandbox.Status, reason string) {
		x.stopWith(status, reason)
		if stuck == nil {
			stuck = time.After(setupTimeout)
		}
	}
	rc := x.p.kernel.replies
	for {
		select {
		case rep, ok := <-rc.replies:
			switch {
			case !ok:
				return 0, fmt.Errorf("the zygote's channel broke: %v", rc.err)
			case rep.Fork == nil || !rep.Fork.Exited:
				return 0, fmt.Errorf("unexpected reply from the zygote: %+v", rep)
			}
			return syscall.WaitStatus(rep.Fork.WaitStatus), nil
		case <-x.p.waited:
			return 0, errors.New("sandbox init ended")
		case <-deadline.C:
			stop(sandbox.StatusTimeout, "wall-time limit of "+x.lim.WallTime().String()+" reached")
		case <-ticker.C:
			if cpu, err := x.runCg.cpuTime(); err == nil && cpu >= x.lim.CPUTime() {
				stop(sandbox.StatusCPULimit, cpuReason(x.lim))
			}
		case <-done:
			done = nil
			stop(sandbox.StatusKilled, "run cancelled: "+ctx.Err().Error())
		case <-stuck:
			return 0, fmt.Errorf("the zygote did not report the killed run's end within %s", setupTimeout)
		}
	}
}
