package linux

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	units "github.com/docker/go-units"
	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// setupTimeout bounds how long building a sandbox may take before the run
// is declared a platform failure.
const setupTimeout = 30 * time.Second

// cpuPollInterval is how often the host compares the cgroup's CPU time with
// the limit. The rlimit catches a single process at whole seconds; this
// catches the total of many processes, at this granularity.
const cpuPollInterval = 50 * time.Millisecond

// cloneFlags are the namespaces every sandbox gets. The cgroup namespace is
// made later, by init, once it is inside the run's cgroup.
const cloneFlags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
	syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// execution is one run in progress.
type execution struct {
	rt   *Runtime
	req  *sandbox.Request
	lim  sandbox.Limits
	spec lang.Spec
	res  *sandbox.Result

	cmd  *exec.Cmd
	cg   runCgroup
	stop struct {
		once   sync.Once
		status sandbox.Status
		reason string
	}
}

// stopWith kills the whole sandbox and records why, once. Killing init, PID
// 1 of the sandbox's PID namespace, makes the kernel kill every other
// process in it.
func (x *execution) stopWith(status sandbox.Status, reason string) {
	x.stop.once.Do(func() {
		x.stop.status, x.stop.reason = status, reason
		_ = x.cmd.Process.Kill()
	})
}

// run executes the request and fills x.res. An error is a platform failure.
func (x *execution) run(ctx context.Context) error {
	t0 := time.Now()
	name := fmt.Sprintf("%d.%d", os.Getpid(), x.rt.seq.Add(1))
	cg, err := newRunCgroup(name, cgroupLimits{MemoryBytes: x.lim.MemoryBytes, Pids: x.lim.Processes + initThreadReserve})
	if err != nil {
		return &sandbox.PlatformError{Op: "create cgroup", Err: err}
	}
	x.cg = cg
	err = x.runInCgroup(ctx, t0)
	if rerr := x.removeCgroup(); err == nil && rerr != nil {
		err = &sandbox.PlatformError{Op: "remove cgroup", Err: rerr}
	}
	return err
}

// removeCgroup deletes the run's cgroup. Every process of the run is dead
// by now (init's exit took the PID namespace with it); kill anyway, so a
// bug elsewhere can never leave a process running or the cgroup behind.
func (x *execution) removeCgroup() error {
	if err := x.cg.remove(); err == nil {
		return nil
	}
	_ = x.cg.kill()
	var err error
	for i := 0; i < 50; i++ {
		if err = x.cg.remove(); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

type pipePair struct{ r, w *os.File }

func newPipes(n int) ([]pipePair, error) {
	ps := make([]pipePair, n)
	for i := range ps {
		r, w, err := os.Pipe()
		if err != nil {
			for _, p := range ps[:i] {
				p.r.Close()
				p.w.Close()
			}
			return nil, err
		}
		ps[i] = pipePair{r, w}
	}
	return ps, nil
}

func (x *execution) runInCgroup(ctx context.Context, t0 time.Time) error {
	pipes, err := newPipes(5)
	if err != nil {
		return &sandbox.PlatformError{Op: "create pipes", Err: err}
	}
	stdin, stdout, stderr, config, events := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4]
	x.cmd = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{initArg0},
		Env:        []string{"GOMAXPROCS=1"}, // nothing of the host's environment
		Stdin:      stdin.r,
		Stdout:     stdout.w,
		Stderr:     stderr.w,
		ExtraFiles: []*os.File{config.r, events.w},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: cloneFlags,
			// If the host dies, its sandboxes die with it.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	startErr := x.cmd.Start()
	for _, f := range []*os.File{stdin.r, stdout.w, stderr.w, config.r, events.w} {
		f.Close()
	}
	if startErr != nil {
		for _, f := range []*os.File{stdin.w, stdout.r, stderr.r, config.w, events.r} {
			f.Close()
		}
		return &sandbox.PlatformError{Op: "start sandbox init", Err: startErr}
	}
	waited := make(chan struct{})
	go func() {
		_ = x.cmd.Wait()
		close(waited)
	}()
	// init must be in the cgroup before it receives its config: until
	// then it only waits on the pipe, so nothing escapes the limits.
	if err := x.cg.add(x.cmd.Process.Pid); err != nil {
		x.stopWith(sandbox.StatusInternal, "")
		<-waited
		for _, f := range []*os.File{stdin.w, stdout.r, stderr.r, config.w, events.r} {
			f.Close()
		}
		return &sandbox.PlatformError{Op: "join cgroup", Err: err}
	}

	var io sync.WaitGroup
	cfg, contents := x.rt.config(x.req, x.lim, x.spec)
	io.Go(func() {
		_ = writeConfig(config.w, cfg, contents)
		config.w.Close()
	})
	io.Go(func() {
		_, _ = stdin.w.Write(x.req.Stdin)
		stdin.w.Close()
	})
	capture := &outputCap{remaining: x.lim.OutputBytes}
	capture.onLimit = func() {
		x.stopWith(sandbox.StatusOutputLimit, "output limit of "+units.BytesSize(float64(x.lim.OutputBytes))+" reached")
	}
	var outs [2]capturedStream
	io.Go(func() { capture.drain(stdout.r, &outs[0]); stdout.r.Close() })
	io.Go(func() { capture.drain(stderr.r, &outs[1]); stderr.r.Close() })
	evs := make(chan initEvent, 4)
	io.Go(func() { readEvents(events.r, evs); events.r.Close() })

	started, last := x.supervise(ctx, t0, evs, waited)
	ended := time.Now()
	io.Wait()
	for ev := range evs { // the exited event may follow init's exit
		last = ev
	}
	return x.finish(t0, started, ended, last, outs)
}

// readEvents decodes init's events until its end of the pipe closes.
func readEvents(r *os.File, out chan<- initEvent) {
	defer close(out)
	s := bufio.NewScanner(r)
	for s.Scan() {
		var ev initEvent
		if json.Unmarshal(s.Bytes(), &ev) == nil {
			out <- ev
		}
	}
}

// supervise enforces the wall-time and CPU-time limits and cancellation
// until init exits. It returns when the program started (zero if never)
// and the last event seen.
func (x *execution) supervise(ctx context.Context, t0 time.Time, evs <-chan initEvent, waited <-chan struct{}) (time.Time, initEvent) {
	var started time.Time
	var last initEvent
	deadline := time.NewTimer(setupTimeout)
	defer deadline.Stop()
	var poll <-chan time.Time
	for {
		select {
		case <-waited:
			return started, last
		case ev, ok := <-evs:
			if !ok {
				evs = nil
				continue
			}
			last = ev
			if ev.Phase == phaseStarted {
				started = time.Now()
				deadline.Reset(x.lim.WallTime())
				ticker := time.NewTicker(cpuPollInterval)
				defer ticker.Stop()
				poll = ticker.C
			}
		case <-deadline.C:
			if started.IsZero() {
				x.stopWith(sandbox.StatusInternal, fmt.Sprintf("sandbox setup took longer than %s", setupTimeout))
			} else {
				x.stopWith(sandbox.StatusTimeout, "wall-time limit of "+x.lim.WallTime().String()+" reached")
			}
		case <-poll:
			if cpu, err := x.cg.cpuTime(); err == nil && cpu >= x.lim.CPUTime() {
				x.stopWith(sandbox.StatusCPULimit, cpuReason(x.lim))
			}
		case <-ctx.Done():
			x.stopWith(sandbox.StatusKilled, "run cancelled: "+ctx.Err().Error())
		}
	}
}

func cpuReason(lim sandbox.Limits) string {
	return "CPU-time limit of " + lim.CPUTime().String() + " reached"
}

// finish turns what was observed into the Result.
func (x *execution) finish(t0, started, ended time.Time, last initEvent, outs [2]capturedStream) error {
	res := x.res
	res.Stdout, res.StdoutTruncated = outs[0].buf.Bytes(), outs[0].truncated
	res.Stderr, res.StderrTruncated = outs[1].buf.Bytes(), outs[1].truncated
	usage, uerr := x.cg.usage()
	res.Metrics.CPUMS = float64(usage.CPU) / float64(time.Millisecond)
	res.Metrics.PeakMemoryBytes = usage.PeakBytes
	if !started.IsZero() {
		res.Metrics.StartMS = float64(started.Sub(t0)) / float64(time.Millisecond)
		res.Metrics.WallMS = float64(ended.Sub(started)) / float64(time.Millisecond)
	}
	if last.Phase == phaseExited {
		res.ExitCode = last.ExitCode
		if last.Signal != 0 {
			res.ExitCode = -1
			res.Signal = unix.SignalName(syscall.Signal(last.Signal))
		}
	} else if x.stop.status != "" && x.stop.status != sandbox.StatusInternal {
		res.Signal = "SIGKILL"
	}
	switch {
	case x.stop.status == sandbox.StatusInternal:
		return &sandbox.PlatformError{Op: "run sandbox", Err: fmt.Errorf("%s", x.stop.reason)}
	case x.stop.status != "":
		res.Status, res.Reason = x.stop.status, x.stop.reason
	case last.Phase == phaseFailed:
		return &sandbox.PlatformError{Op: "build sandbox", Err: fmt.Errorf("%s", last.Error)}
	case last.Phase != phaseExited:
		return &sandbox.PlatformError{Op: "run sandbox", Err: fmt.Errorf("sandbox init ended without reporting (%v)", x.cmd.ProcessState)}
	case uerr != nil:
		return &sandbox.PlatformError{Op: "read cgroup usage", Err: uerr}
	default:
		res.Status, res.Reason = x.exitStatus(last, usage)
	}
	if res.Status == sandbox.StatusError && x.spec.ParseError != nil {
		res.Error = x.spec.ParseError(res.Stderr, x.spec.MainPath())
	}
	return nil
}

// exitStatus classifies a program that ended on its own.
func (x *execution) exitStatus(ev initEvent, usage cgroupUsage) (sandbox.Status, string) {
	sig := syscall.Signal(ev.Signal)
	failed := ev.Signal != 0 || ev.ExitCode != 0
	switch {
	case failed && usage.OOMKills > 0:
		return sandbox.StatusMemoryLimit, "memory limit of " + units.BytesSize(float64(x.lim.MemoryBytes)) + " reached; the kernel's OOM killer ended the program"
	case sig == syscall.SIGXCPU, sig == syscall.SIGKILL && usage.CPU >= x.lim.CPUTime():
		return sandbox.StatusCPULimit, cpuReason(x.lim)
	case sig == syscall.SIGXFSZ:
		return sandbox.StatusError, "file size limit of " + units.BytesSize(float64(x.lim.FileSizeBytes)) + " reached"
	case ev.Signal != 0:
		return sandbox.StatusKilled, "the program was ended by " + unix.SignalName(sig)
	case ev.ExitCode != 0:
		return sandbox.StatusError, ""
	}
	return sandbox.StatusOK, ""
}
