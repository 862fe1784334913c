package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	units "github.com/docker/go-units"

	"github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// The native runtime's session timings (sandbox/linux/session.go).
const (
	// interruptGrace is how long a cell has to yield to the interrupt
	// before its session is killed.
	interruptGrace = 2 * time.Second
	// exitWait is how long a cell waits for the kernel's exit once its
	// reply channel closed, before the session is killed.
	exitWait = time.Second
	// idleStopAfter is how long a session's processes may run after a
	// cell before the container is paused until the next one.
	idleStopAfter = 20 * time.Millisecond
	// oomWait is how long the daemon's report of an OOM kill may trail
	// the kernel's death by SIGKILL.
	oomWait = 2 * time.Second
)

// cellStop records why a cell was stopped, once.
type cellStop struct {
	once   sync.Once
	status sandbox.Status
	reason string
	sent   chan struct{} // closed when the interrupt was sent
}

// Exec runs a cell; see sandbox.Session.
func (s *Session) Exec(ctx context.Context, cell sandbox.Cell) (sandbox.Result, error) {
	if err := cell.Validate(); err != nil {
		return sandbox.Result{}, err
	}
	release, err := s.use()
	if err != nil {
		return sandbox.Result{}, err
	}
	defer release()
	s.cellMu.Lock()
	defer s.cellMu.Unlock()
	select {
	case <-s.done:
		return sandbox.Result{}, errInterpreterExited
	case <-s.life.Load().exited:
		return sandbox.Result{}, errInterpreterExited
	default:
	}
	if err := ctx.Err(); err != nil { // cancelled while it waited its turn
		return sandbox.CellNotStarted(err), nil
	}
	s.cells++
	return s.runCell(ctx, cell, s.cells)
}

// resume unpauses a paused container, and keeps a running one from being
// paused; cellMu is held.
func (s *Session) resume(ctx context.Context) error {
	if s.idle != nil {
		s.idle.Stop()
	}
	if !s.paused {
		return nil
	}
	if err := s.rt.cli.ContainerUnpause(ctx, s.cid); err != nil {
		return err
	}
	s.paused = false
	return nil
}

// pause pauses the container now; cellMu is held. What cannot be held
// still cannot be trusted to stay idle: a failure kills the session.
func (s *Session) pause(ctx context.Context) error {
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.paused || s.closing.Load() {
		return nil
	}
	if err := s.rt.cli.ContainerPause(ctx, s.cid); err != nil {
		s.kill()
		s.finish()
		return &sandbox.PlatformError{Op: "pause the session", Err: err}
	}
	s.paused = true
	return nil
}

// pauseWhenIdle pauses the container idleStopAfter from now, unless a cell
// or a file operation comes first; cellMu is held.
func (s *Session) pauseWhenIdle() {
	if s.idle == nil {
		s.idle = time.AfterFunc(idleStopAfter, s.pauseIdle)
		return
	}
	s.idle.Reset(idleStopAfter)
}

func (s *Session) pauseIdle() {
	if !s.cellMu.TryLock() {
		return // a cell or file operation runs; it pauses again after
	}
	defer s.cellMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	_ = s.pause(ctx)
}

func (s *Session) runCell(ctx context.Context, cell sandbox.Cell, n int) (sandbox.Result, error) {
	wall := s.lim.WallTime()
	if cell.TimeoutMS > 0 {
		wall = time.Duration(cell.TimeoutMS) * time.Millisecond
	}
	res := sandbox.Result{Language: sandbox.Python, Limits: s.lim, ImageDigest: s.rt.imageDigest, Stdout: sandbox.Data{}, Stderr: sandbox.Data{}}
	res.Limits.WallTimeMS = wall.Milliseconds()
	res.CodeHash = sandbox.CodeHash(cell.Code)
	life := s.life.Load()
	if err := s.resume(ctx); err != nil {
		s.kill()
		s.finish()
		return sandbox.Result{}, &sandbox.PlatformError{Op: "resume the session", Err: err}
	}
	if s.work == nil {
		// What the session held before the cell is unknown (an
		// interpreter died): taken now, so that only the cell's files
		// are its artifacts.
		s.work, _, _ = s.scanWork(ctx, nil, nil)
	}
	cpu0 := s.billedCPU
	start := time.Now()
	if reason, stray := strayReply(life); stray {
		s.kill()
		return s.kernelGone(res, life, cpu0, start, reason)
	}
	stop := &cellStop{sent: make(chan struct{})}
	interrupt := func(status sandbox.Status, reason string) {
		stop.once.Do(func() {
			stop.status, stop.reason = status, reason
			life.interrupt()
			close(stop.sent)
		})
	}
	s.out.begin(s.lim.OutputBytes, func() {
		interrupt(sandbox.StatusOutputLimit, "output limit of "+units.BytesSize(float64(s.lim.OutputBytes))+" reached; the cell was interrupted")
	}, cell.OnOutput)
	token := ids.New(ids.Session)
	req, _ := json.Marshal(kernel.NewRequest(n, cell, token))
	life.request(append(req, '\n'))
	timer := time.NewTimer(wall)
	defer timer.Stop()
	cpu := &cpuWatch{}
	cpu.last.Store(cpu0)
	quit := make(chan struct{})
	defer close(quit)
	cpuOver := make(chan struct{})
	go cpu.watch(s, cpu0, s.lim.CPUTime(), cpuOver, quit)
	replies := life.replies
	var grace, exited <-chan time.Time
	for {
		select {
		case reply, ok := <-replies:
			switch {
			case !ok && life.err == kernel.ErrChannelClosed:
				// Most likely the interpreter is exiting: wait for the
				// multiplexer to say how, but not for long.
				replies, exited = nil, time.After(exitWait)
				continue
			case !ok:
				s.kill()
				return s.kernelGone(res, life, cpu0, start, "the kernel's reply channel broke: "+life.err.Error()+"; the session was killed")
			case reply.ID != n:
				s.kill()
				return s.kernelGone(res, life, cpu0, start, fmt.Sprintf("the kernel sent a reply for cell %d while cell %d ran; "+
					"a reply is taken only from the cell it answers, so the session was killed", reply.ID, n))
			case reply.Token != token:
				s.kill()
				return s.kernelGone(res, life, cpu0, start, "the kernel sent a reply for this cell without its token (one sent before the cell started); "+
					"a reply is taken only from the cell it answers, so the session was killed")
			}
			return s.finishCell(ctx, res, life, reply, stop, cpu, start)
		case <-life.exited:
			return s.kernelGone(res, life, cpu0, start, "")
		case <-exited:
			s.kill()
			return s.kernelGone(res, life, cpu0, start, "the kernel's reply channel closed and the interpreter did not exit; the session was killed")
		case <-timer.C:
			interrupt(sandbox.StatusTimeout, "wall-time limit of "+wall.String()+" reached; the cell was interrupted, the session kept")
		case <-cpuOver:
			cpuOver = nil
			interrupt(sandbox.StatusCPULimit, "CPU-time limit of "+s.lim.CPUTime().String()+" reached; the cell was interrupted, the session kept")
		case <-ctx.Done():
			interrupt(sandbox.StatusKilled, "cell cancelled: "+ctx.Err().Error())
		case <-stop.sent:
			stop.sent = nil
			grace = time.After(interruptGrace)
		case <-grace:
			// The cell ignores interrupts: the session cannot be trusted
			// to recover.
			s.kill()
			s.finish()
			<-life.exited
			s.out.end(&res)
			res.Status = stop.status
			res.Reason = fmt.Sprintf("%s; the cell did not yield to the interrupt within %s, so the session was killed", strings.SplitN(stop.reason, ";", 2)[0], interruptGrace)
			res.ExitCode, res.Signal = -1, "SIGKILL"
			res.Metrics.WallMS = ms(time.Since(start))
			return res, nil
		}
	}
}

// strayReply reports a reply, or a broken reply channel, while no cell
// waits for one, and says which.
func strayReply(l *kernelLife) (reason string, stray bool) {
	select {
	case reply, ok := <-l.replies:
		if !ok {
			return "the kernel's reply channel broke while no cell ran; the session was killed", true
		}
		return fmt.Sprintf("the kernel sent a reply (id %d) while no cell waited for one; a reply is taken only from the cell it answers, so the session was killed", reply.ID), true
	default:
		return "", false
	}
}

// finishCell builds the Result of a cell the kernel answered. Every byte
// the cell wrote arrived before the reply (see cellOutput); a reply
// already behind this one is a second reply for the cell: it ends the
// session. The container is paused idleStopAfter later, unless another
// cell comes first.
func (s *Session) finishCell(ctx context.Context, res sandbox.Result, life *kernelLife, reply kernel.Reply, stop *cellStop, cpu *cpuWatch, start time.Time) (sandbox.Result, error) {
	wall := time.Since(start)
	s.out.end(&res)
	if reason, stray := strayReply(life); stray {
		s.kill()
		return s.kernelGone(res, life, s.billedCPU, start, reason)
	}
	defer s.pauseWhenIdle()
	res.Metrics.WallMS = ms(wall)
	// Exact from the host's cgroup files; else the CPU watch's last
	// sample (the daemon takes too long to answer one more).
	last, peak := cpu.last.Load(), cpu.peak.Load()
	if s.cg != nil {
		if c, p, err := s.cg.read(); err == nil {
			last, peak = c, p
		}
	}
	res.Metrics.CPUMS = float64(last-s.billedCPU) / 1e6
	res.Metrics.PeakMemoryBytes = peak
	s.billedCPU = last
	budget := artifactBudget{content: s.lim.ArtifactBytes}
	budget.content -= kernel.ApplyReply(&res, reply, budget.content)
	// /work is read back only when the multiplexer's digest of it
	// changed since it was last read: a cell that touched no file costs
	// no archive.
	if d := life.digest(); d == "" || d != s.workDigest || s.work == nil {
		after, files, err := s.scanWork(ctx, s.work, &budget)
		s.work, s.workDigest = after, d
		res.Artifacts = append(res.Artifacts, files...)
		if err != nil {
			s.work, s.workDigest = nil, ""
			res.Reason = strings.TrimPrefix(res.Reason+"; the artifacts are incomplete ("+err.Error()+")", "; ")
		}
	}
	switch {
	case stop.status != "":
		res.Status, res.Reason = stop.status, stop.reason
	case res.Error != nil && res.Error.Type == "MemoryError":
		res.Status = sandbox.StatusMemoryLimit
		res.Reason = "the cell ran out of memory (limit " + units.BytesSize(float64(s.lim.MemoryBytes)) + "): an allocation failed with MemoryError; the interpreter survived and every variable is kept"
	case res.StdoutTruncated || res.StderrTruncated:
		res.Status = sandbox.StatusOutputLimit
		res.Reason = "output limit of " + units.BytesSize(float64(s.lim.OutputBytes)) + " reached"
	}
	return res, nil
}

// kernelGone builds the Result of a cell during which the kernel exited,
// or the session killed the container (killedFor says why). The session
// is over, unless the kernel ran out of memory and a fresh one started in
// the same container.
func (s *Session) kernelGone(res sandbox.Result, life *kernelLife, cpu0 int64, start time.Time, killedFor string) (sandbox.Result, error) {
	select {
	case <-life.exited:
	case <-time.After(killGrace + setupTimeout):
	}
	s.out.end(&res)
	s.work, s.workDigest = nil, ""
	res.Metrics.WallMS = ms(time.Since(start))
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if cpu, peak, err := s.usage(ctx); err == nil {
		res.Metrics.CPUMS, res.Metrics.PeakMemoryBytes = float64(cpu-cpu0)/1e6, peak
		s.billedCPU = cpu
	}
	sig, code := life.exitSignal()
	res.ExitCode = code
	if sig != 0 {
		res.Signal = sandbox.SignalName(sig) // Linux's, whatever GOOS this is built for
	}
	switch {
	case killedFor != "":
		res.Status, res.ExitCode, res.Signal = sandbox.StatusKilled, -1, "SIGKILL"
		res.Reason = killedFor
	case s.closing.Load():
		res.Status, res.ExitCode, res.Signal = sandbox.StatusKilled, -1, "SIGKILL"
		res.Reason = "the session was closed while the cell ran"
	case s.oomKilled(ctx, life, sig):
		res.Status = sandbox.StatusMemoryLimit
		res.Reason, res.Restarted = s.restartAfterOOM(ctx)
	case !life.hasStatus:
		res.Status, res.ExitCode, res.Signal = sandbox.StatusKilled, -1, ""
		res.Reason = "the kernel's stream ended (" + life.why() + "); the session is closed"
	case sig != 0:
		res.Status = sandbox.StatusKilled
		res.Reason = "the interpreter was ended by " + res.Signal + "; the session is closed"
	default:
		res.Status = sandbox.StatusError
		res.Reason = fmt.Sprintf("the interpreter exited with code %d; the session is closed", code)
	}
	if !res.Restarted {
		s.kill()
		s.finish()
	}
	return res, nil
}

// oomKilled reports whether the kernel of life died of the memory limit:
// killed by SIGKILL while the daemon reported an OOM kill in the container
// that no restart has answered yet, or (under gVisor, whose sandbox dies
// whole) with the container, which the daemon says the OOM killer ended.
func (s *Session) oomKilled(ctx context.Context, life *kernelLife, sig int) bool {
	if life.hasStatus && sig != sandbox.SIGKILL {
		return false
	}
	deadline := time.Now().Add(oomWait)
	for {
		if s.ooms.Load() > s.oomsTaken.Load() {
			return true
		}
		if !life.hasStatus {
			if ins, err := s.rt.cli.ContainerInspect(ctx, s.cid); err == nil && ins.State != nil && !ins.State.Running && ins.State.OOMKilled {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// restartAfterOOM starts a fresh kernel in the session's container after
// the running cell ran the last out of memory, and returns the cell's
// reason and whether the restart succeeded. Under gVisor the whole
// sandbox died: nothing is left to restart in. cellMu is held.
func (s *Session) restartAfterOOM(ctx context.Context) (reason string, restarted bool) {
	s.oomsTaken.Store(s.ooms.Load())
	limit := units.BytesSize(float64(s.lim.MemoryBytes))
	ins, err := s.rt.cli.ContainerInspect(ctx, s.cid)
	if err != nil || ins.State == nil || !ins.State.Running {
		return fmt.Sprintf("the cell ran out of memory (limit %s) and the sandbox was killed with its interpreter; "+
			"the session is closed", limit), false
	}
	l, err := s.startKernel(ctx)
	if err != nil {
		return fmt.Sprintf("the cell ran out of memory (limit %s) and the interpreter was killed; "+
			"it could not be restarted (%v), so the session is closed", limit, err), false
	}
	s.life.Store(l)
	s.pauseWhenIdle()
	return fmt.Sprintf("the cell ran out of memory (limit %s): the interpreter was killed and restarted, and every "+
		"variable and import was lost; the files in the working directory are kept", limit), true
}

// cpuWatch samples the container's CPU time while a cell runs.
type cpuWatch struct {
	last, peak atomic.Int64
}

// watch closes over once the container has used limit of CPU time since
// cpu0, polling until quit is closed (see execution.watchCPU).
func (w *cpuWatch) watch(s *Session, cpu0 int64, limit time.Duration, over, quit chan struct{}) {
	ticker := time.NewTicker(cpuPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-quit:
			return
		case <-ticker.C:
			ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
			cpu, peak, err := s.usage(ctx)
			cancel()
			if err != nil {
				continue
			}
			w.last.Store(cpu)
			w.peak.Store(peak)
			if time.Duration(cpu-cpu0) >= limit {
				close(over)
				return
			}
		}
	}
}

// usage returns the container's CPU time so far (ns) and its peak memory
// use (bytes), from the daemon's statistics.
func (r *Runtime) usage(ctx context.Context, cid string) (cpu, peak int64, err error) {
	st, err := r.cli.ContainerStatsOneShot(ctx, cid)
	if err != nil {
		return 0, 0, err
	}
	defer st.Body.Close()
	var v container.StatsResponse
	if err := json.NewDecoder(st.Body).Decode(&v); err != nil {
		return 0, 0, err
	}
	return int64(v.CPUStats.CPUUsage.TotalUsage), int64(max(v.MemoryStats.MaxUsage, v.MemoryStats.Usage)), nil
}
