package linux

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	units "github.com/docker/go-units"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// runZygote serves x's request with the fork of the zygote of slot p (see
// zygote.go) made for it, taken at t0, and fills x.res. An error is a
// platform failure. The slot is reset, and the next run forked, after the
// result is known, off the caller's path (recycleZygote).
func (x *execution) runZygote(ctx context.Context, p *sandboxProc, t0 time.Time) (err error) {
	x.p = p
	f := p.zygote.next
	p.zygote.next = nil
	cg := f.cg
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
	if err := x.startFork(f); err != nil {
		f.close()
		return &sandbox.PlatformError{Op: "start program in zygote slot", Err: err}
	}
	stdio := f.stdio
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
	// read and the result returned, as in a cold run; that anything was
	// left retires the slot.
	if n, err := cg.pidsCurrent(); err != nil || n > 0 {
		anomaly = retireFor(retiredProcessLeft, fmt.Errorf("%d processes left running after the program ended (%v)", n, err))
		if err := killAll(cg); err != nil {
			serr = errors.Join(serr, err)
		}
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
		anomaly = retireFor(retiredOOM, errors.New("the run was OOM-killed"))
	}
	return nil
}

// killAll kills every process of cg and waits until they are gone.
func killAll(cg runCgroup) error {
	deadline := time.Now().Add(setupTimeout)
	for {
		if err := cg.kill(); err != nil {
			return err
		}
		n, err := cg.pidsCurrent()
		switch {
		case err != nil:
			return err
		case n == 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d processes of the run still there %s after they were killed", n, setupTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// startFork gives the request to f, the slot's fork made for it: the
// run's limits on its cgroup, the program and input files in the sandbox
// (placeProgram), then the request, the program's code with it (the
// fork need not read the file), on its gate.
func (x *execution) startFork(f *forked) error {
	if err := f.cg.setLimits(runCgroupLimits(x.lim)); err != nil {
		return err
	}
	x.cpuBase = f.cpuBase // the fork was ready, and its memory peak reset, when it was made
	if err := x.placeProgram(); err != nil {
		return err
	}
	msg, err := x.kernelRun()
	if err != nil {
		return err
	}
	_, err = f.gate.Write(msg)
	f.gate.Close()
	return err
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
			if cpu, err := x.runCg.cpuTime(); err == nil && cpu-x.cpuBase >= x.lim.CPUTime() {
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
