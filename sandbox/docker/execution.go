package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	units "github.com/docker/go-units"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// setupTimeout bounds the API calls that build a container and start the
// program, and those that take it down: a daemon that hangs fails the run
// instead of holding it forever.
const setupTimeout = 60 * time.Second

// killGrace is how long the output stream may go on after the container
// was killed.
const killGrace = time.Second

// execution is one run in progress.
type execution struct {
	rt  *Runtime
	req *sandbox.Request
	lim sandbox.Limits
	res *sandbox.Result

	box *box   // the run's container and uid
	id  string // the container's
	// leftovers is set when a pooled container's agent saw processes left
	// after the program's end (agent.go).
	leftovers bool
	// cg are the container's cgroup v1 directories when this host has
	// them (sockmem.go): the CPU watch reads them instead of asking the
	// daemon.
	cg cgroupDirs
	// lastCPU and lastPeak are the last sample of the container's CPU
	// time (ns) and peak memory use (bytes); see watchCPU.
	lastCPU, lastPeak atomic.Int64
	stop              struct {
		once   sync.Once
		status sandbox.Status
		reason string
	}
}

// stopWith kills the container and records why, once.
func (x *execution) stopWith(status sandbox.Status, reason string) {
	x.stop.once.Do(func() {
		x.stop.status, x.stop.reason = status, reason
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		_ = x.rt.cli.ContainerKill(ctx, x.id, "KILL")
	})
}

// run executes the request and fills x.res. An error is a platform failure.
func (x *execution) run(ctx context.Context) (err error) {
	t0 := time.Now()
	spec := lang.For(x.req.Language)
	setup, cancelSetup := context.WithTimeout(ctx, setupTimeout)
	defer cancelSetup()
	if x.box, err = x.rt.acquire(setup, x.lim); err != nil {
		return err
	}
	defer func() {
		// Removed whatever happened, with its volumes, even when ctx is
		// done: nothing of the run may remain. The uid is free again once
		// its container is gone.
		if x.box == nil {
			return // a pooled container was dropped and none replaced it
		}
		if rerr := x.rt.release(x.box); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := x.prepare(setup, spec); err != nil {
		return err
	}
	x.cg = x.box.cg
	if onContainer != nil {
		onContainer(x.req.Env, x.id)
	}
	if !x.req.Network.IsZero() {
		proxy, err := x.startEgress(setup)
		if err != nil {
			return &sandbox.PlatformError{Op: "start network proxy", Err: err}
		}
		// Before the container is removed: the program has ended, its
		// connections and the listener go with it.
		defer func() { x.res.Network = proxy.Close() }()
	}
	argv := append([]string{"/usr/bin/env", "-i"}, lang.Environ(x.req.Language, x.rt.env, x.req.Env)...)
	argv = append(argv, spec.Argv()...)
	if x.rt.ociRuntime == GVisorRuntime {
		argv = gvisorRelay(argv) // gvisor_relay.go says why
	}
	acquired := time.Now()
	execID, conn, stdin, err := x.startProgram(setup, argv)
	if err != nil {
		return err
	}
	defer conn.Close()
	started := time.Now()
	cancelSetup()

	var workers sync.WaitGroup
	workers.Go(func() {
		if _, err := conn.Conn.Write(stdin); err == nil {
			_, _ = conn.Conn.Write(x.req.Stdin)
		}
		_ = conn.CloseWrite()
	})
	var out captured
	readDone, limited := make(chan error, 1), make(chan struct{})
	workers.Go(func() {
		readDone <- readOutput(conn.Reader, x.lim.OutputBytes, x.req.OnOutput, func() { close(limited) }, &out)
	})

	x.supervise(ctx, readDone, limited, func() { conn.Close() })
	ended := time.Now()
	conn.Close() // unblocks the stdin writer of a program that never read it
	workers.Wait()

	x.res.Metrics.QueueMS = ms(acquired.Sub(t0))
	x.res.Metrics.StartMS = ms(started.Sub(acquired))
	x.res.Metrics.WallMS = ms(ended.Sub(started))
	x.res.Stdout, x.res.StdoutTruncated = out.out.Bytes(), out.outTrunc
	x.res.Stderr, x.res.StderrTruncated = out.err.Bytes(), out.errTrunc
	return x.finish(spec, execID)
}

// startProgram starts the program, argv, as the run's uid in /work,
// through a launcher (launcher.go): a pooled container's, already started,
// or one started now in an exec. The launcher's stdin must first receive
// the returned bytes, the encoded argv. It returns the exec's id and its
// attached stream.
func (x *execution) startProgram(ctx context.Context, argv []string) (string, types.HijackedResponse, []byte, error) {
	args, err := launchArgs(argv)
	if err != nil {
		return "", types.HijackedResponse{}, nil, &sandbox.PlatformError{Op: "start program", Err: err}
	}
	l := x.box.launch
	if l == nil {
		if l, err = x.rt.startLauncher(ctx, x.id, x.box.uid); err != nil {
			return "", types.HijackedResponse{}, nil, &sandbox.PlatformError{Op: "start program", Err: err}
		}
	}
	return l.id, l.conn, args, nil
}

// prepare places the program's file and the input files in the run's
// container. A pooled container that does not take them (it died while it
// waited: the daemon restarted, ...) is dropped, and the run makes a
// container of its own.
func (x *execution) prepare(ctx context.Context, spec lang.Spec) error {
	x.id = x.box.id
	err := x.place(ctx, spec, x.box.uid)
	if err == nil || x.box.agent == nil {
		return err
	}
	x.rt.pool.log.Warn("docker pool: a ready container failed; the run takes the cold path", "runtime", x.rt.name(), "id", x.id, "err", err)
	stale := x.box
	x.box = nil
	_ = x.rt.release(stale)
	if x.box, err = x.rt.acquireCold(ctx, x.lim); err != nil {
		return err
	}
	x.id = x.box.id
	return x.place(ctx, spec, x.box.uid)
}

// place copies the program's file into /code and the input files into
// /work through the archive upload.
func (x *execution) place(ctx context.Context, spec lang.Spec, uid int) error {
	if err := x.placeCode(ctx, spec); err != nil {
		return err
	}
	if len(x.req.Files) == 0 {
		return nil
	}
	files, err := filesArchive(x.req.Files, uid)
	if err != nil {
		return &sandbox.PlatformError{Op: "input files", Err: err}
	}
	if err := x.rt.cli.CopyToContainer(ctx, x.id, lang.WorkDir, bytes.NewReader(files), container.CopyToContainerOptions{}); err != nil {
		return &sandbox.PlatformError{Op: "copy input files", Err: err}
	}
	return nil
}

// placeCode copies the program's file into /code: through a pooled
// container's agent, else through the archive upload.
func (x *execution) placeCode(ctx context.Context, spec lang.Spec) error {
	if a := x.box.agent; a != nil {
		if err := a.placeCode(path.Base(spec.MainPath()), x.req.Code); err != nil {
			return &sandbox.PlatformError{Op: "copy program file", Err: err}
		}
		return nil
	}
	code, err := codeArchive(path.Base(spec.MainPath()), x.req.Code)
	if err != nil {
		return &sandbox.PlatformError{Op: "program file", Err: err}
	}
	if err := x.rt.cli.CopyToContainer(ctx, x.id, lang.CodeDir, bytes.NewReader(code), container.CopyToContainerOptions{}); err != nil {
		return &sandbox.PlatformError{Op: "copy program file", Err: err}
	}
	return nil
}

// supervise waits for the program's output to end, enforcing the
// wall-time limit, the output limit and cancellation by killing the
// container.
//
// Once the container is killed, the stream ends when the daemon has
// copied what the dead processes' pipes held; under gVisor it may not end
// at all, so after killGrace closeStream ends it from this side. Under
// gVisor the container can also stop with nobody killing it: the host's
// OOM killer ends the sentry at the memory limit, and the stream then
// stays open until the wall-time limit (seen: 61 s of a 60 s limit for a
// program ended in half a second), and the daemon forgets the exec: so
// the container's stop ends the run as its inspection says (stopOnExit).
func (x *execution) supervise(ctx context.Context, readDone <-chan error, limited <-chan struct{}, closeStream func()) {
	deadline := time.NewTimer(x.lim.WallTime())
	defer deadline.Stop()
	cpuOver := make(chan struct{})
	quit := make(chan struct{})
	defer close(quit)
	go x.watchCPU(ctx, cpuOver, quit)
	var exited <-chan container.WaitResponse
	if x.rt.ociRuntime == GVisorRuntime {
		waitCtx, cancelWait := context.WithCancel(context.Background())
		defer cancelWait()
		exited, _ = x.rt.cli.ContainerWait(waitCtx, x.id, container.WaitConditionNotRunning)
	}
	done := ctx.Done()
	var grace <-chan time.Time
	stop := func(status sandbox.Status, reason string) {
		x.stopWith(status, reason)
		if grace == nil {
			grace = time.After(killGrace)
		}
	}
	for {
		select {
		case <-grace:
			closeStream()
		case <-exited:
			exited = nil
			stop(x.stopOnExit())
		case <-cpuOver:
			cpuOver = nil
			stop(sandbox.StatusCPULimit, "CPU-time limit of "+x.lim.CPUTime().String()+" reached")
		case err := <-readDone:
			if err != nil {
				x.stopWith(sandbox.StatusInternal, "read the program's output: "+err.Error())
			}
			return
		case <-limited:
			limited = nil
			stop(sandbox.StatusOutputLimit, "output limit of "+units.BytesSize(float64(x.lim.OutputBytes))+" reached")
		case <-deadline.C:
			stop(sandbox.StatusTimeout, "wall-time limit of "+x.lim.WallTime().String()+" reached")
		case <-done:
			done = nil // killed once; wait for the stream's end
			stop(sandbox.StatusKilled, "run cancelled: "+ctx.Err().Error())
		}
	}
}

// stopOnExit classifies a gvisor container that stopped with the program
// still running: the OOM killer ended its sentry (the memory limit), or
// the sandbox failed.
func (x *execution) stopOnExit() (sandbox.Status, string) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	ins, err := x.rt.cli.ContainerInspect(ctx, x.id)
	switch {
	case err != nil:
		return sandbox.StatusInternal, "the sandbox's container stopped during the run, and inspecting it failed: " + err.Error()
	case ins.State != nil && ins.State.OOMKilled:
		return sandbox.StatusMemoryLimit, x.memoryReason()
	case ins.State != nil:
		return sandbox.StatusInternal, fmt.Sprintf("the sandbox's container stopped during the run (exit code %d)", ins.State.ExitCode)
	}
	return sandbox.StatusInternal, "the sandbox's container stopped during the run"
}

// finish waits for the exec's exit, collects the artifacts and the
// metrics while the container lives, then kills it and classifies the end.
func (x *execution) finish(spec lang.Spec, execID string) error {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	res := x.res
	if x.stop.status == "" {
		code, err := x.exitCode(ctx, execID)
		if err != nil {
			return &sandbox.PlatformError{Op: "inspect exec", Err: err}
		}
		// The metrics are the last sample of the CPU watch (every
		// cpuPollInterval): the daemon takes up to a second to answer one
		// more, which a run of print(1) would wait for; where the cgroup's
		// files are at hand (cgroup v1, local), one more sample costs
		// microseconds, and a run shorter than the interval has none.
		if x.cg.cpuacct != "" {
			x.cpuTime(ctx)
		}
		res.Metrics.CPUMS = float64(x.lastCPU.Load()) / 1e6
		res.Metrics.PeakMemoryBytes = x.lastPeak.Load()
		if err := x.collectArtifacts(ctx); err != nil {
			return err
		}
		// Only a failed program can have been ended by the OOM killer, and
		// the daemon records it once the container has stopped: kill what
		// the program left running (an error here is a container that
		// stopped already; oomKilled waits for the stop either way). A
		// program that succeeded skips this: removing the container kills
		// what is left.
		oom := false
		if x.leftovers && code == 0 {
			// What the program left running ends before Run returns (a
			// pooled container is removed after it, in the background).
			_ = x.rt.cli.ContainerKill(ctx, x.id, "KILL")
			if _, err := x.oomKilled(ctx); err != nil {
				return &sandbox.PlatformError{Op: "stop container", Err: err}
			}
		}
		if code != 0 {
			_ = x.rt.cli.ContainerKill(ctx, x.id, "KILL")
			if oom, err = x.oomKilled(ctx); err != nil {
				return &sandbox.PlatformError{Op: "inspect container", Err: err}
			}
		}
		res.Status, res.Reason = x.exitStatus(code, oom)
		if res.Status == sandbox.StatusError && spec.ParseError != nil {
			res.Error = spec.ParseError(res.Stderr, spec.MainPath())
		}
		return nil
	}
	if x.stop.status == sandbox.StatusInternal {
		return &sandbox.PlatformError{Op: "run container", Err: errors.New(x.stop.reason)}
	}
	res.Status, res.Reason, res.Signal = x.stop.status, x.stop.reason, "SIGKILL"
	// An OOM kill that came before the limit that stopped the run is
	// still the memory limit's doing.
	if oom, err := x.oomKilled(ctx); err == nil && oom && x.stop.status != sandbox.StatusKilled {
		res.Status, res.Reason = sandbox.StatusMemoryLimit, x.memoryReason()
	}
	return nil
}

// exitCode waits (briefly: the output's end comes with the exit) for the
// exec to end and returns its exit code.
func (x *execution) exitCode(ctx context.Context, execID string) (int, error) {
	for {
		ins, err := x.rt.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return 0, err
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// oomKilled waits until the container has stopped (it was killed) and
// reports whether the kernel's OOM killer ended a process of it.
func (x *execution) oomKilled(ctx context.Context) (bool, error) {
	waitC, errC := x.rt.cli.ContainerWait(ctx, x.id, container.WaitConditionNotRunning)
	select {
	case <-waitC:
	case err := <-errC:
		return false, err
	}
	ins, err := x.rt.cli.ContainerInspect(ctx, x.id)
	if err != nil {
		return false, err
	}
	return ins.State != nil && ins.State.OOMKilled, nil
}

// cpuPollInterval is how often the container's CPU time is compared with
// the limit.
const cpuPollInterval = 100 * time.Millisecond

// watchCPU closes over when the container's processes together have used
// the CPU-time limit, polling until quit is closed. The rlimit catches one
// process at whole seconds; this, the total of all the container's
// processes. It polls in a goroutine of its own: a statistics call the
// daemon is slow to answer must not delay noticing the program's end.
func (x *execution) watchCPU(ctx context.Context, over, quit chan struct{}) {
	ticker := time.NewTicker(cpuPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-quit:
			return
		case <-ticker.C:
			if cpu, ok := x.cpuTime(ctx); ok && cpu >= x.lim.CPUTime() {
				close(over)
				return
			}
		}
	}
}

// cpuTime returns the CPU time of all the container's processes so far,
// and keeps it and the peak of memory use as the run's metrics.
func (x *execution) cpuTime(ctx context.Context) (time.Duration, bool) {
	if x.cg.cpuacct != "" {
		// From the cgroup itself: microseconds, where the daemon's
		// statistics take up to a second to answer on a busy host.
		cpu, err := readInt(filepath.Join(x.cg.cpuacct, "cpuacct.usage"))
		if err != nil {
			return 0, false
		}
		if peak, err := readInt(filepath.Join(x.cg.memory, "memory.max_usage_in_bytes")); err == nil {
			x.lastPeak.Store(peak)
		}
		x.lastCPU.Store(cpu)
		return time.Duration(cpu), true
	}
	st, err := x.rt.cli.ContainerStatsOneShot(ctx, x.id)
	if err != nil {
		return 0, false
	}
	defer st.Body.Close()
	var s container.StatsResponse
	if json.NewDecoder(st.Body).Decode(&s) != nil {
		return 0, false
	}
	x.lastCPU.Store(int64(s.CPUStats.CPUUsage.TotalUsage))
	x.lastPeak.Store(int64(max(s.MemoryStats.MaxUsage, s.MemoryStats.Usage)))
	return time.Duration(s.CPUStats.CPUUsage.TotalUsage), true
}

// collectArtifacts reads the files the program left in /work.
func (x *execution) collectArtifacts(ctx context.Context) error {
	if a := x.box.agent; a != nil {
		// A pooled container's agent tells whether there is anything to
		// download and whether processes are left; if it cannot, the
		// download decides and the container is killed.
		empty, others, err := a.afterRun()
		x.leftovers = others
		if err == nil && empty {
			return nil
		}
	}
	rc, _, err := x.rt.cli.CopyFromContainer(ctx, x.id, lang.WorkDir+"/.")
	if err != nil {
		return &sandbox.PlatformError{Op: "collect artifacts", Err: err}
	}
	defer rc.Close()
	seen := map[string]bool{}
	arts, err := readArtifacts(ctx, rc, x.req.Files, artifactBudget{content: x.lim.ArtifactBytes, read: x.lim.ArtifactBytes + x.lim.DiskBytes}, seen)
	x.res.Artifacts = arts
	switch {
	case errors.Is(err, errReadBudget):
		// The archive cannot skip a file's bytes (a sparse file's holes
		// come as zeros): the rest are listed by name and size alone.
		rc.Close()
		files, lerr := x.listWork(ctx, x.box.uid)
		if lerr != nil {
			x.res.Reason = "artifacts: " + err.Error() + "; the files after " + arts[len(arts)-1].Name + " are not listed (" + lerr.Error() + ")"
			break
		}
		x.res.Artifacts = listRest(arts, seen, files)
	case err != nil:
		return &sandbox.PlatformError{Op: "collect artifacts", Err: err}
	}
	return nil
}

// exitStatus classifies a program that ended on its own. An exec reports a
// program a signal ended as 128 plus the signal's number, as a shell
// does; a program that exits with such a code itself is taken for one
// ended by that signal.
func (x *execution) exitStatus(code int, oom bool) (sandbox.Status, string) {
	res := x.res
	res.ExitCode = code
	var sig int // Linux's number (sandbox.SignalName)
	if code > 128 && code <= 128+64 {
		sig = code - 128
		res.ExitCode, res.Signal = -1, sandbox.SignalName(sig)
	}
	switch {
	case code != 0 && oom:
		if x.rt.ociRuntime == GVisorRuntime {
			// The sentry was SIGKILLed, the program with it (gvisor_memory.go).
			res.ExitCode, res.Signal = -1, "SIGKILL"
		}
		return sandbox.StatusMemoryLimit, x.memoryReason()
	case sig == sandbox.SIGXCPU, sig == sandbox.SIGKILL && res.Metrics.CPUMS >= float64(x.lim.CPUTimeMS):
		return sandbox.StatusCPULimit, "CPU-time limit of " + x.lim.CPUTime().String() + " reached"
	case sig == sandbox.SIGXFSZ:
		return sandbox.StatusError, "file size limit of " + units.BytesSize(float64(x.lim.FileSizeBytes)) + " reached"
	case sig != 0:
		return sandbox.StatusKilled, "the program was ended by " + sandbox.SignalName(sig)
	case code != 0:
		return sandbox.StatusError, ""
	}
	return sandbox.StatusOK, ""
}

func (x *execution) memoryReason() string {
	if x.rt.ociRuntime == GVisorRuntime {
		return "memory limit of " + units.BytesSize(float64(x.lim.MemoryBytes)) + " reached; " + gvisorOOM
	}
	return "memory limit of " + units.BytesSize(float64(x.lim.MemoryBytes)) + " reached; the kernel's OOM killer ended the program"
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// readInt reads a cgroup file holding one integer.
func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// onContainer, set by this package's tests alone (export_test.go), is told
// which container serves a run whose environment is env: the gVisor host
// checks follow that container's processes on the host, which the
// program's own are not (they are the sentry's tasks).
var onContainer func(env map[string]string, id string)
