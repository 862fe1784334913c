package linux

import (
	"encoding/json"
	"path"

	"context"
	"errors"
	"fmt"
	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
	"sync"
	"syscall"
	"time"

	units "github.com/docker/go-units"
	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// cpuPollInterval is how often the host compares the cgroup's CPU time with
// the limit. The rlimit catches a single process at whole seconds; this
// catches the total of many processes, at this granularity.
const cpuPollInterval = 50 * time.Millisecond

// testHookStarted, when a test sets it, runs when init reports that the
// program started, before init leaves the run's cgroup: it stands for a
// host slow to react.
var testHookStarted func()

// testHookBooting, when a test sets it, runs as the host begins to start
// a cold run's kernel: it cancels the run there.
var testHookBooting func()

// testHookCollecting, when a test sets it, runs as the host begins to
// collect a run's artifacts: it cancels the run there.
var testHookCollecting func()

// execution is one run in progress.
type execution struct {
	rt   *Runtime
	req  *sandbox.Request
	lim  sandbox.Limits
	spec lang.Spec
	res  *sandbox.Result

	p       *sandboxProc
	cpuBase time.Duration // the cgroup's CPU time when the program started
	// runCg and killRun are set for a run in a zygote slot: the run's own
	// cgroup (the sandbox's is the zygote's), and how to end the run,
	// which leaves the sandbox.
	runCg   runCgroup
	killRun func()
	// filesPlaced is set when the input files are in the sandbox already
	// (bootForRun had init place them).
	filesPlaced bool
	stop        struct {
		once   sync.Once
		status sandbox.Status
		reason string
	}
}

// stopWith kills the whole sandbox and records why, once.
func (x *execution) stopWith(status sandbox.Status, reason string) {
	x.stop.once.Do(func() {
		x.stop.status, x.stop.reason = status, reason
		if x.killRun != nil {
			x.killRun()
			return
		}
		x.p.kill()
	})
}

// cgroup is the cgroup that holds the run's processes.
func (x *execution) cgroup() runCgroup {
	if x.runCg != nil {
		return x.runCg
	}
	return x.p.cg
}

// run executes the request and fills x.res. An error is a platform failure.
func (x *execution) run(ctx context.Context) (err error) {
	t0 := time.Now()
	if p := x.rt.takeZygote(ctx, x.req, x.lim); p != nil {
		return x.runZygote(ctx, p, t0)
	}
	p := x.rt.takeWarm(ctx, x.req, x.lim)
	warm := p != nil
	acquired := time.Now()
	if !warm {
		if p, err = x.rt.acquire(ctx, cgroupLimitsFor(x.lim)); err != nil {
			return &sandbox.PlatformError{Op: "prepare sandbox", Err: err}
		}
		// The kernel's start is the run's start-up (Metrics.StartMS), as
		// the interpreter's is in a cold run.
		acquired = time.Now()
		if x.runByKernel() {
			if err := x.bootForRun(ctx, p); err != nil {
				_ = x.rt.retire(p)
				return err
			}
			warm = true
		}
	}
	x.p = p
	defer func() {
		if rerr := x.rt.retire(p); rerr != nil && err == nil {
			err = &sandbox.PlatformError{Op: "clean up sandbox", Err: rerr}
		}
	}()

	if !x.req.Network.IsZero() {
		proxy, env, err := x.startEgress()
		if err != nil {
			return &sandbox.PlatformError{Op: "start network proxy", Err: err}
		}
		defer func() { x.res.Network = proxy.Close() }() // the program has ended: its connections go with it
		x.req.Env = env
	}

	var workers sync.WaitGroup
	var started time.Time
	if warm {
		if err := x.startWarm(); err != nil {
			return &sandbox.PlatformError{Op: "start program in warm sandbox", Err: err}
		}
		started = time.Now()
	} else {
		if err := p.armPids(x.lim.Processes); err != nil {
			return &sandbox.PlatformError{Op: "prepare sandbox", Err: err}
		}
		cfg, contents := runConfigFor(x.req, x.lim, x.spec, x.rt.env)
		workers.Go(func() {
			_ = sandboxinit.WriteMessage(p.config, cfg, contents)
			p.config.Close()
		})
	}
	workers.Go(func() {
		_, _ = p.stdin.Write(x.req.Stdin)
		p.stdin.Close()
	})
	capture := &outputCap{remaining: x.lim.OutputBytes, out: newSerialOutput(x.req.OnOutput)}
	capture.onLimit = func() {
		x.stopWith(sandbox.StatusOutputLimit, "output limit of "+units.BytesSize(float64(x.lim.OutputBytes))+" reached")
	}
	var outs [2]capturedStream
	workers.Go(func() { capture.drain(p.stdout, sandbox.StreamStdout, &outs[0]) })
	workers.Go(func() { capture.drain(p.stderr, sandbox.StreamStderr, &outs[1]) })

	started, last := x.supervise(ctx, started)
	ended := time.Now()
	// Init reports the exit once every process but itself is dead, and a
	// killed init takes every process with it: either way every write end
	// of the output pipes is closed and the readers reach end-of-file.
	workers.Wait()
	if last.Phase != sandboxinit.PhaseExited {
		for ev := range p.events { // init is gone: the channel closes
			last = ev
		}
	}
	res := x.res
	if last.Phase == sandboxinit.PhaseExited && x.stop.status == "" {
		// The sandbox is still mounted; its processes are gone.
		if err := x.collectArtifacts(ctx); err != nil {
			return err
		}
	}
	res.Metrics.QueueMS = ms(acquired.Sub(t0))
	if !started.IsZero() {
		res.Metrics.StartMS = ms(started.Sub(acquired))
		res.Metrics.WallMS = ms(ended.Sub(started))
	}
	if err := x.finish(last, outs); err != nil {
		return err
	}
	if x.runByKernel() && x.req.Rules != nil {
		x.applyPolicyReply()
	}
	return nil
}

// collectArtifacts reads the files the program left in the working
// directory into the result, once its processes are gone.
func (x *execution) collectArtifacts(ctx context.Context) error {
	work, err := openWorkDir(x.p.cmd.Process.Pid)
	if err != nil {
		return &sandbox.PlatformError{Op: "collect artifacts", Err: err}
	}
	if testHookCollecting != nil {
		testHookCollecting()
	}
	var aerr error
	x.res.Artifacts, aerr = work.artifacts(ctx, inputFilter(x.req.Files), new(budgetFor(x.lim)))
	work.close()
	if aerr != nil {
		x.stopWith(sandbox.StatusKilled, "run cancelled while its artifacts were collected ("+aerr.Error()+"); the artifacts are incomplete")
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// supervise enforces the wall-time and CPU-time limits and cancellation
// until init exits. It returns when the program started (zero if never)
// and the last event seen. started is set when the program was already
// running (a warm sandbox).
func (x *execution) supervise(ctx context.Context, started time.Time) (time.Time, sandboxinit.Event) {
	var last sandboxinit.Event
	deadline := time.NewTimer(setupTimeout)
	defer deadline.Stop()
	ticker := time.NewTicker(cpuPollInterval)
	ticker.Stop()
	defer ticker.Stop()
	if !started.IsZero() {
		deadline.Reset(x.lim.WallTime())
		ticker.Reset(cpuPollInterval)
	}
	evs := x.p.events
	for {
		select {
		case <-x.p.waited:
			return started, last
		case ev, ok := <-evs:
			if !ok {
				evs = nil
				continue
			}
			last = ev
			if ev.Phase == sandboxinit.PhaseExited {
				return started, last
			}
			if ev.Phase == sandboxinit.PhaseStarted {
				started = time.Now()
				if testHookStarted != nil {
					testHookStarted()
				}
				if err := x.leaveCgroup(); err != nil {
					x.stopWith(sandbox.StatusInternal, "move init out of the run's cgroup: "+err.Error())
				}
				deadline.Reset(x.lim.WallTime())
				ticker.Reset(cpuPollInterval)
			}
		case <-deadline.C:
			if started.IsZero() {
				x.stopWith(sandbox.StatusInternal, fmt.Sprintf("starting the program took longer than %s", setupTimeout))
			} else {
				x.stopWith(sandbox.StatusTimeout, "wall-time limit of "+x.lim.WallTime().String()+" reached")
			}
		case <-ticker.C:
			if cpu, err := x.p.cg.cpuTime(); err == nil && cpu-x.cpuBase >= x.lim.CPUTime() {
				x.stopWith(sandbox.StatusCPULimit, cpuReason(x.lim))
			}
		case <-ctx.Done():
			x.stopWith(sandbox.StatusKilled, "run cancelled: "+ctx.Err().Error())
		}
	}
}

// leaveCgroup moves init out of the run's cgroup now that the program has
// been forked, and makes the process limit exact: from here on only the
// program's own processes and threads count against it. The limit is
// lowered first: moved out first, init would free its places under the
// limit armPids set, and the program could take them before the limit fell.
func (x *execution) leaveCgroup() error {
	if err := x.p.cg.setPidsMax(x.lim.Processes); err != nil {
		return err
	}
	if err := x.p.cg.evict(x.p.cmd.Process.Pid); err != nil {
		return err
	}
	x.p.evicted = true
	return nil
}

// startWarm hands the request to a warm sandbox's interpreter: the input
// files, the memory limit and the program's file (placeProgram), then the
// program and its rlimits on the private channel. The interpreter applies
// the rlimits to itself before the program's first line.
func (x *execution) startWarm() error {
	cpu, err := x.p.cg.cpuTime()
	if err != nil {
		return err
	}
	x.cpuBase = cpu
	x.p.cg.resetPeak()
	if err := x.placeProgram(); err != nil {
		return err
	}
	msg, err := x.kernelRun()
	if err != nil {
		return err
	}
	_, err = x.p.toKernel.Write(append(msg, '\n'))
	x.p.toKernel.Close()
	return err
}

// kernelRun is the request that has a warm interpreter or a zygote's
// fork run the program.
func (x *execution) kernelRun() ([]byte, error) {
	return json.Marshal(kernel.Run{Op: "run", Code: x.req.Code, Env: x.req.Env, Limits: kernel.RunLimits{
		CPUSeconds: (x.lim.CPUTimeMS + 999) / 1000, FileSizeBytes: x.lim.FileSizeBytes, OpenFiles: x.lim.OpenFiles,
	}, Policy: x.req.Rules})
}

// placeProgram puts the request into a sandbox whose interpreter is
// running already: the input files in the working directory, the memory
// limit in /proc/meminfo and the program's file, as a cold run has it,
// /code/main.py alone.
func (x *execution) placeProgram() error {
	if len(x.req.Files) > 0 && !x.filesPlaced {
		work, err := openWorkDir(x.p.cmd.Process.Pid)
		if err != nil {
			return err
		}
		err = work.placeFiles(x.req.Files, x.p.uid)
		work.close()
		if err != nil {
			return err
		}
	}
	if err := x.p.showMemory(x.lim.MemoryBytes); err != nil {
		return err
	}
	// The program's file, as a cold run has it: /code/main.py, alone.
	code, err := openSandboxDir(x.p.cmd.Process.Pid, lang.CodeDir)
	if err != nil {
		return err
	}
	defer code.close()
	if err := code.writeFile(path.Base(x.spec.MainPath()), []byte(x.req.Code), 0, 0, 0o644); err != nil {
		return fmt.Errorf("program file: %w", err)
	}
	// A zygote slot's later runs find it gone.
	if err := unix.Unlinkat(code.fd, path.Base(kernel.PythonPath), 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove the kernel file: %w", err)
	}
	return nil
}

func cpuReason(lim sandbox.Limits) string {
	return "CPU-time limit of " + lim.CPUTime().String() + " reached"
}

// finish turns what was observed into the Result.
func (x *execution) finish(last sandboxinit.Event, outs [2]capturedStream) error {
	res := x.res
	res.Stdout, res.StdoutTruncated = outs[0].buf.Bytes(), outs[0].truncated
	res.Stderr, res.StderrTruncated = outs[1].buf.Bytes(), outs[1].truncated
	usage, uerr := x.cgroup().usage()
	usage.CPU -= x.cpuBase
	res.Metrics.CPUMS = ms(usage.CPU)
	res.Metrics.PeakMemoryBytes = usage.PeakBytes
	if last.Phase == sandboxinit.PhaseExited {
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
		return &sandbox.PlatformError{Op: "run sandbox", Err: errors.New(x.stop.reason)}
	case x.stop.status != "":
		res.Status, res.Reason = x.stop.status, x.stop.reason
	case last.Phase == sandboxinit.PhaseFailed:
		return &sandbox.PlatformError{Op: "start program", Err: errors.New(last.Error)}
	case last.Phase != sandboxinit.PhaseExited:
		return &sandbox.PlatformError{Op: "run sandbox", Err: fmt.Errorf("sandbox init ended without reporting (%v)", x.p.cmd.ProcessState)}
	case uerr != nil:
		return &sandbox.PlatformError{Op: "read cgroup usage", Err: uerr}
	default:
		res.Status, res.Reason = x.exitStatus(last, usage)
	}
	if x.spec.ParseError != nil && (res.Status == sandbox.StatusError || res.Status == sandbox.StatusTimeout && x.spec.ParseOnTimeout) {
		res.Error = x.spec.ParseError(res.Stderr, x.spec.MainPath())
	}
	return nil
}

// exitStatus classifies a program that ended on its own.
func (x *execution) exitStatus(ev sandboxinit.Event, usage cgroupUsage) (sandbox.Status, string) {
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
