package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	units "github.com/docker/go-units"
	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// interruptGrace is how long a cell has to yield to the interrupt (a
// KeyboardInterrupt in Python) before its session is killed.
const interruptGrace = 2 * time.Second

// killWait bounds how long a cell waits for its session's sandbox to be
// gone once the session killed it.
const killWait = 10 * time.Second

// exitWait is how long a cell waits for init to report the interpreter's
// exit once the kernel has closed its reply channel (as an exiting
// process does), before the session kills the sandbox.
const exitWait = time.Second

// Session is a live Python interpreter (the kernel) in its own native
// sandbox. It implements sandbox.Session.
//
// Security: a session's processes run only while one of its cells runs,
// and for at most idleStopAfter after it. Then its processes are stopped
// (see runCgroup.freeze) until the next cell, so that what a cell leaves
// behind (a thread, a forked child) can neither use CPU beyond every limit
// nor write while no cell runs; file operations do not need the
// interpreter and work on a stopped session. All CPU time the cgroup
// counts after the kernel has started is billed to a cell: what was used
// between two cells counts toward the next one's, limit included (see
// billed).
//
// What a cell can and cannot forge: a cell runs in the kernel's own
// interpreter, so it can read everything the kernel knows (its request,
// token included) and change how the kernel behaves. It can therefore
// make its own cell report any value, error or output, and a thread or a
// patched kernel it leaves behind can do the same to later cells of the
// session, as it could by redefining print: a session's cells are only as
// trustworthy as the code run before them in it. What the host decides
// itself and no cell can change is: the status of a cell stopped at a
// limit, the metrics (from the cgroup), which output belongs to which cell
// (by time, see cellStream), what the files are, and that a reply is taken
// only for the cell it answers: a reply whose id and token are not the
// running cell's, a reply sent while no cell runs, or a second reply ends
// the session (its cell reports killed) instead of becoming a result. No
// cell can affect another session.
type Session struct {
	rt        *Runtime
	id        string
	lim       sandbox.Limits
	p         *sandboxProc
	work      *workDir
	kernelPid int
	replies   *replyChannel
	stdout    *cellStream
	stderr    *cellStream
	env       map[string]string // the request's, which a restarted kernel is set up with
	// life is the running interpreter: the first, or the last restarted.
	// It is replaced, cellMu held, only by a cell that saw the one before
	// die of the memory limit (restart).
	life atomic.Pointer[kernelLife]
	// done is closed once the session has ended: closed, or its
	// interpreter exited without a restart.
	done     chan struct{}
	doneOnce sync.Once

	cellMu sync.Mutex // one cell at a time
	cells  int
	// billed is what the cgroup had counted (CPU time, OOM kills) when
	// the last cell was billed: the next cell's counts start from it, so
	// that nothing used between cells (before the session is stopped)
	// goes unaccounted, and a cell reads the cgroup once, at its end.
	billed cgroupUsage
	// idle stops the session idleStopAfter after a cell, unless another
	// has started (see resume); stopped says it did. Guarded by cellMu.
	idle    *time.Timer
	stopped bool
	lifeMu  sync.RWMutex // Close excludes every other use
	closed  bool
	// closing is set by Close before it kills the sandbox, so that a cell
	// running then can tell why its interpreter vanished.
	closing atomic.Bool
	// expiring is set while the idle reaper closes the session.
	expiring atomic.Bool
}

var _ sandbox.Session = (*Session)(nil)
var _ sandbox.SessionRuntime = (*Runtime)(nil)

// kernelLife is one interpreter of a session, from its start to its exit.
type kernelLife struct {
	exited chan struct{} // closed when init has reported the exit (or died)
	exit   sandboxinit.Event
}

// NewSession starts a Python kernel in a fresh sandbox; see
// sandbox.SessionRuntime.
func (r *Runtime) NewSession(ctx context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if err := r.sessions.reserve(); err != nil {
		return nil, err
	}
	s, err := r.startSession(ctx, &req)
	if err != nil {
		r.sessions.unreserve()
		return nil, err
	}
	r.sessions.add(s)
	return s, nil
}

func (r *Runtime) startSession(ctx context.Context, req *sandbox.SessionRequest) (*Session, error) {
	lim := req.Limits.WithSessionDefaults()
	if p := r.takeWarmSession(ctx, req, lim); p != nil {
		s := &Session{rt: r, id: ids.New(ids.Session), lim: lim, p: p, env: req.Env, done: make(chan struct{})}
		if err := s.attach(p.kernel); err != nil {
			_ = r.retire(p)
			return nil, err
		}
		return s, nil
	}
	p, err := r.acquire(ctx, cgroupLimitsFor(lim))
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "prepare sandbox", Err: err}
	}
	s := &Session{rt: r, id: ids.New(ids.Session), lim: lim, p: p, env: req.Env, done: make(chan struct{})}
	if err := s.boot(ctx, req); err != nil {
		_ = r.retire(p)
		return nil, err
	}
	return s, nil
}

// boot starts the kernel and the session's watchers.
func (s *Session) boot(ctx context.Context, req *sandbox.SessionRequest) error {
	k, err := s.rt.bootKernel(ctx, s.p, s.lim, req.Env, req.Files, sessionKernel, nil)
	if err != nil {
		return err
	}
	return s.attach(k)
}

// attach makes the running kernel k the session's, and starts the
// session's watchers. The session's CPU time is counted from here.
func (s *Session) attach(k *kernelProc) error {
	var err error
	if s.work, err = openWorkDir(s.p.cmd.Process.Pid); err != nil {
		return &sandbox.PlatformError{Op: "open working directory", Err: err}
	}
	return s.attachKernel(k)
}

// live makes the running kernel k the session's life, watched.
func (s *Session) live(k *kernelProc) {
	s.kernelPid, s.replies = k.pid, k.replies
	life := &kernelLife{exited: make(chan struct{})}
	s.life.Store(life)
	go s.watchEvents(life)
}

// attachKernel makes the running kernel k the session's: its replies,
// its output streams, its life; the session's CPU time is counted from
// here.
func (s *Session) attachKernel(k *kernelProc) error {
	var err error
	s.live(k)
	if s.stdout, err = newCellStream(s.p.stdout, sandbox.StreamStdout); err != nil {
		return &sandbox.PlatformError{Op: "read the kernel's output", Err: err}
	}
	if s.stderr, err = newCellStream(s.p.stderr, sandbox.StreamStderr); err != nil {
		return &sandbox.PlatformError{Op: "read the kernel's output", Err: err}
	}
	if s.billed, err = s.p.cg.usage(); err != nil {
		return &sandbox.PlatformError{Op: "read the session's CPU time", Err: err}
	}
	return nil
}

// watchEvents waits for init to report the exit of the kernel of life,
// then ends the session unless a cell restarted the kernel (settle).
func (s *Session) watchEvents(life *kernelLife) {
	defer s.settle(life)
	defer close(life.exited)
	for ev := range s.p.events {
		if ev.Phase == sandboxinit.PhaseExited {
			life.exit = ev
			return
		}
	}
}

// settle ends the session once the kernel of life has exited, unless a
// cell restarted it: a cell that sees its kernel die holds cellMu until
// it has restarted it or given up.
func (s *Session) settle(life *kernelLife) {
	s.cellMu.Lock()
	restarted := s.life.Load() != life
	s.cellMu.Unlock()
	if !restarted {
		s.end()
	}
}

// end marks the session ended (Done).
func (s *Session) end() { s.doneOnce.Do(func() { close(s.done) }) }

// childOf returns the pid of init's only child, the kernel.
func childOf(initPid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", initPid, initPid))
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(b))
	if len(fields) != 1 {
		return 0, fmt.Errorf("sandbox init has %d children, want 1", len(fields))
	}
	return strconv.Atoi(fields[0])
}

// ID names the session.
func (s *Session) ID() string { return s.id }

// Done is closed once the session has ended on any account: closed,
// expired when idle, or its interpreter exited (and was not restarted
// after running out of memory). Whoever keeps a table of sessions
// (package service) learns of the end from it, without polling.
func (s *Session) Done() <-chan struct{} { return s.done }

// use guards an operation against Close and marks the session used.
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
	return func() {
		s.rt.sessions.touch(s)
		s.lifeMu.RUnlock()
	}, nil
}

// errInterpreterExited is why a session whose interpreter exited for good
// refuses every operation.
var errInterpreterExited = fmt.Errorf("%w: its interpreter has exited", sandbox.ErrSessionClosed)

// files returns a handle of its own on the working directory, which the
// caller closes. The session's lock is held only to take it: the file
// operations run outside it, so that Close (and the idle reaper, and a
// server's shutdown) never waits for one, whatever the program put where.
func (s *Session) files() (*workDir, error) {
	release, err := s.use()
	if err != nil {
		return nil, err
	}
	defer release()
	return s.work.dup()
}

// WriteFile creates or replaces a regular file in the working directory.
// A read-only input file, or a file in a directory holding one, is
// refused with an *sandbox.InputError: they are immutable.
func (s *Session) WriteFile(ctx context.Context, name string, content []byte) error {
	w, err := s.files()
	if err != nil {
		return err
	}
	defer w.close()
	return w.writeFile(name, content, s.p.uid, s.p.uid, 0o644)
}

// ReadFile returns a regular file of the working directory.
func (s *Session) ReadFile(ctx context.Context, name string) ([]byte, error) {
	w, err := s.files()
	if err != nil {
		return nil, err
	}
	defer w.close()
	return w.readFile(name, s.lim.DiskBytes)
}

// ListFiles lists the working directory.
func (s *Session) ListFiles(ctx context.Context) ([]sandbox.FileInfo, error) {
	w, err := s.files()
	if err != nil {
		return nil, err
	}
	defer w.close()
	return w.list(), nil
}

// Close ends the session: the kernel and everything it started are killed
// and the sandbox destroyed.
func (s *Session) Close() error {
	// Kill first: a running cell holds the session until it returns, and
	// it returns as soon as its interpreter is gone, with status killed.
	s.closing.Store(true)
	s.kill()
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.rt.sessions.remove(s)
	if s.work != nil {
		s.work.close()
	}
	err := s.rt.retire(s.p)
	s.end()
	return err
}

// kill ends the sandbox. Its processes may be stopped (between cells);
// a stopped process still dies of SIGKILL (see runCgroup.freeze).
func (s *Session) kill() { s.p.kill() }

// idleStopAfter is how long a session's processes may run after a cell
// before they are stopped until the next one. Stopping costs a fraction of
// a millisecond, too much to pay after every cell of a notebook run back
// to back; this bounds what a cell's leftovers can use unbilled-for to the
// next cell, and unstopped, to idleStopAfter of every CPU.
const idleStopAfter = 20 * time.Millisecond

// stopWhenIdle stops the session idleStopAfter from now, unless a cell
// starts first; cellMu is held.
func (s *Session) stopWhenIdle() {
	if s.idle == nil {
		s.idle = time.AfterFunc(idleStopAfter, s.stopIdle)
		return
	}
	s.idle.Reset(idleStopAfter)
}

// stopIdle stops the processes of a session no cell has used since
// stopWhenIdle.
func (s *Session) stopIdle() {
	// A cell that holds cellMu now resumes the session anyway.
	if !s.cellMu.TryLock() {
		return
	}
	defer s.cellMu.Unlock()
	if s.stopped || s.closing.Load() {
		return
	}
	if err := s.p.cg.freeze(); err != nil {
		// What cannot be held still cannot be trusted to stay idle.
		s.kill()
		return
	}
	s.stopped = true
}

// resume lets a stopped session's processes run again, and keeps one that
// is not from being stopped; cellMu is held.
func (s *Session) resume() error {
	if s.idle != nil {
		s.idle.Stop()
	}
	if !s.stopped {
		return nil
	}
	s.stopped = false
	return s.p.cg.thaw()
}

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
	case <-s.life.Load().exited: // between cells, for good: no cell restarts it now
		return sandbox.Result{}, errInterpreterExited
	default:
	}
	if err := ctx.Err(); err != nil { // cancelled while it waited its turn
		return sandbox.CellNotStarted(err), nil
	}
	s.cells++
	s.rt.cellsRunning.enter()
	defer s.rt.cellsRunning.leave()
	return s.runCell(ctx, cell, s.cells)
}

func (s *Session) runCell(ctx context.Context, cell sandbox.Cell, n int) (sandbox.Result, error) {
	wall := s.lim.WallTime()
	if cell.TimeoutMS > 0 {
		wall = time.Duration(cell.TimeoutMS) * time.Millisecond
	}
	res := sandbox.Result{Language: sandbox.Python, Limits: s.lim, ImageDigest: s.rt.imageDigest, Stdout: sandbox.Data{}, Stderr: sandbox.Data{}}
	res.Limits.WallTimeMS = wall.Milliseconds()
	res.CodeHash = sandbox.CodeHash(cell.Code)
	before := map[string]unix.Stat_t{}
	for _, e := range s.work.walk() {
		before[e.name] = e.stat
	}
	usage0 := s.billed
	life := s.life.Load()
	if reason, stray := s.strayReply(); stray {
		s.kill()
		return s.kernelGone(res, usage0, time.Now(), reason)
	}
	stop := &cellStop{sent: make(chan struct{})}
	interrupt := func(status sandbox.Status, reason string) {
		stop.once.Do(func() {
			stop.status, stop.reason = status, reason
			_ = syscall.Kill(s.kernelPid, syscall.SIGINT)
			close(stop.sent)
		})
	}
	outputOver := func() {
		interrupt(sandbox.StatusOutputLimit, "output limit of "+units.BytesSize(float64(s.lim.OutputBytes))+" reached; the cell was interrupted")
	}
	out := newSerialOutput(cell.OnOutput)
	// Resumed first: a session that cannot be leaves its streams between
	// cells. What the session writes before begin is kept for this cell.
	if err := s.resume(); err != nil {
		s.kill()
		return sandbox.Result{}, &sandbox.PlatformError{Op: "resume the session", Err: err}
	}
	s.stdout.begin(s.lim.OutputBytes, outputOver, out)
	s.stderr.begin(s.lim.OutputBytes, outputOver, out)
	token := ids.New(ids.Session)
	req, _ := json.Marshal(kernel.NewRequest(n, cell, token))
	start := time.Now()
	timer := time.NewTimer(wall)
	defer timer.Stop()
	// A cell of up to 4 MiB does not fit in the pipe: the write waits for
	// the kernel to read, and a kernel an earlier cell made deaf must not
	// hold the cell past its wall time.
	_ = s.p.toKernel.SetWriteDeadline(start.Add(wall))
	if _, err := s.p.toKernel.Write(append(req, '\n')); err != nil {
		reason := "the kernel's request channel broke (" + err.Error() + "); the session was killed"
		if errors.Is(err, os.ErrDeadlineExceeded) {
			reason = "the kernel did not read the cell within its wall-time limit of " + wall.String() + "; the session was killed"
		}
		s.kill()
		return s.kernelGone(res, usage0, start, reason)
	}
	ticker := time.NewTicker(cpuPollInterval)
	defer ticker.Stop()
	replies := s.replies.replies
	var grace, exited <-chan time.Time
	for {
		select {
		case reply, ok := <-replies:
			switch {
			case !ok && errors.Is(s.replies.err, errRepliesClosed):
				// Most likely the interpreter is exiting: wait for init
				// to say how, but not for long.
				replies, exited = nil, time.After(exitWait)
				continue
			case !ok:
				s.kill()
				return s.kernelGone(res, usage0, start, "the kernel's reply channel broke: "+s.replies.err.Error()+"; the session was killed")
			case reply.ID != n:
				s.kill()
				return s.kernelGone(res, usage0, start, fmt.Sprintf("the kernel sent a reply for cell %d while cell %d ran; "+
					"a reply is taken only from the cell it answers, so the session was killed", reply.ID, n))
			case reply.Token != token:
				s.kill()
				return s.kernelGone(res, usage0, start, "the kernel sent a reply for this cell without its token (one sent before the cell started); "+
					"a reply is taken only from the cell it answers, so the session was killed")
			}
			return s.finishCell(ctx, res, reply, stop, usage0, start, before)
		case <-life.exited:
			return s.kernelGone(res, usage0, start, "")
		case <-exited:
			s.kill()
			return s.kernelGone(res, usage0, start, "the kernel's reply channel broke: "+s.replies.err.Error()+", and the interpreter did not exit; the session was killed")
		case <-timer.C:
			interrupt(sandbox.StatusTimeout, "wall-time limit of "+wall.String()+" reached; the cell was interrupted, the session kept")
		case <-ticker.C:
			if cpu, err := s.p.cg.cpuTime(); err == nil && cpu-usage0.CPU >= s.lim.CPUTime() {
				interrupt(sandbox.StatusCPULimit, "CPU-time limit of "+s.lim.CPUTime().String()+" reached; the cell was interrupted, the session kept")
			}
		case <-ctx.Done():
			interrupt(sandbox.StatusKilled, "cell cancelled: "+ctx.Err().Error())
		case <-stop.sent:
			stop.sent = nil // a nil channel blocks: seen once
			grace = time.After(interruptGrace)
		case <-grace:
			// The cell ignores interrupts (a SIGINT handler, a blocking C
			// call): the session cannot be trusted to recover.
			s.kill()
			s.end()
			res.Status = stop.status
			res.Reason = fmt.Sprintf("%s; the cell did not yield to the interrupt within %s, so the session was killed", strings.SplitN(stop.reason, ";", 2)[0], interruptGrace)
			res.ExitCode, res.Signal = -1, "SIGKILL"
			s.collectStreams(&res, time.Now().Add(time.Second))
			res.Metrics.WallMS = ms(time.Since(start))
			return res, nil
		}
	}
}

// strayReply reports a reply, or a broken reply channel, while no cell
// waits for one (between cells, or after the running cell's reply), and
// says which.
func (s *Session) strayReply() (reason string, stray bool) {
	select {
	case reply, ok := <-s.replies.replies:
		if !ok {
			return "the kernel's reply channel broke (" + s.replies.err.Error() + ") while no cell ran; the session was killed", true
		}
		return fmt.Sprintf("the kernel sent a reply (id %d) while no cell waited for one; a reply is taken only from the cell it answers, so the session was killed", reply.ID), true
	default:
		return "", false
	}
}

// collectStreams takes the output of a cell whose sandbox was killed, or
// whose interpreter exited, from both streams.
func (s *Session) collectStreams(res *sandbox.Result, deadline time.Time) {
	res.Stdout, res.StdoutTruncated = s.stdout.endDead(deadline)
	res.Stderr, res.StderrTruncated = s.stderr.endDead(deadline)
	fillStreams(res)
}

// collectAnswered takes the output of a cell the kernel answered.
func (s *Session) collectAnswered(res *sandbox.Result) error {
	var err, errErr error
	res.Stdout, res.StdoutTruncated, err = s.stdout.endAnswered()
	res.Stderr, res.StderrTruncated, errErr = s.stderr.endAnswered()
	fillStreams(res)
	return errors.Join(err, errErr)
}

// fillStreams makes absent output empty, as a Result has it.
func fillStreams(res *sandbox.Result) {
	if res.Stdout == nil {
		res.Stdout = sandbox.Data{}
	}
	if res.Stderr == nil {
		res.Stderr = sandbox.Data{}
	}
}

// finishCell builds the Result of a cell the kernel answered.
//
// The kernel flushes the cell's output before it replies, so every byte
// the cell wrote is in the pipes when the reply comes: what they hold
// then ends the cell's output (see cellStream.endAnswered). A reply already behind
// this one is a second reply for the cell: it ends the session. The
// session is stopped idleStopAfter later, unless another cell comes first.
func (s *Session) finishCell(ctx context.Context, res sandbox.Result, reply kernel.Reply, stop *cellStop, usage0 cgroupUsage, start time.Time, before map[string]unix.Stat_t) (sandbox.Result, error) {
	wall := time.Since(start)
	if err := s.collectAnswered(&res); err != nil {
		s.kill()
		return s.kernelGone(res, usage0, start, "the cell's output could not be read ("+err.Error()+"); the session was killed")
	}
	if reason, stray := s.strayReply(); stray {
		s.kill()
		return s.kernelGone(res, usage0, start, reason)
	}
	defer s.stopWhenIdle()
	res.Metrics.WallMS = ms(wall)
	usage, _ := s.p.cg.usage()
	s.billed = usage
	res.Metrics.CPUMS = ms(usage.CPU - usage0.CPU)
	res.Metrics.PeakMemoryBytes = usage.PeakBytes
	budget := budgetFor(s.lim)
	budget.content -= kernel.ApplyReply(&res, reply, budget.content)
	if stop.status != "" {
		res.Status, res.Reason = stop.status, stop.reason
	} else if reason := survivedOOM(usage.OOMKills > usage0.OOMKills, res.Error, s.lim.MemoryBytes); reason != "" {
		res.Status, res.Reason = sandbox.StatusMemoryLimit, reason
	}
	// A cell whose output went past the limit ends as output_limit however
	// the reads fell: when the reply came before the reader took its last
	// bytes, endAnswered found them past the cap with no interrupt left to
	// send.
	if stop.status == "" && (res.StdoutTruncated || res.StderrTruncated) {
		res.Status = sandbox.StatusOutputLimit
		res.Reason = "output limit of " + units.BytesSize(float64(s.lim.OutputBytes)) + " reached"
	}
	unchanged := func(e entry) bool {
		old, ok := before[e.name]
		return ok && old.Size == e.stat.Size && old.Mtim == e.stat.Mtim && old.Ctim == e.stat.Ctim && old.Ino == e.stat.Ino
	}
	files, err := s.work.artifacts(ctx, artifactFilter{skip: unchanged}, &budget)
	res.Artifacts = append(res.Artifacts, files...)
	if err != nil {
		if stop.status == "" {
			res.Status, res.Reason = sandbox.StatusKilled, "cell cancelled while its artifacts were collected ("+err.Error()+"), the session kept"
		}
		res.Reason += "; the artifacts are incomplete"
	}
	return res, nil
}

// kernelGone builds the Result of a cell during which the kernel exited,
// or the session killed its sandbox (killedFor says why): the session is
// over.
func (s *Session) kernelGone(res sandbox.Result, usage0 cgroupUsage, start time.Time, killedFor string) (sandbox.Result, error) {
	var exit sandboxinit.Event // as init reported it, once exited is closed
	life := s.life.Load()
	wait := time.NewTimer(killWait)
	defer wait.Stop()
	select {
	case <-life.exited:
		exit = life.exit
	case <-wait.C:
		// The sandbox outlives its kill (a task stuck in the kernel):
		// the cell ends anyway; Close retires what is left.
	}
	res.Metrics.WallMS = ms(time.Since(start))
	s.collectStreams(&res, time.Now().Add(time.Second))
	usage, _ := s.p.cg.usage()
	res.Metrics.CPUMS = ms(usage.CPU - usage0.CPU)
	res.Metrics.PeakMemoryBytes = usage.PeakBytes
	res.ExitCode = exit.ExitCode
	if exit.Signal != 0 {
		res.ExitCode, res.Signal = -1, unix.SignalName(syscall.Signal(exit.Signal))
	}
	switch {
	case exit.Phase != sandboxinit.PhaseExited && killedFor != "":
		// The session killed the sandbox before the interpreter ended on
		// its own account.
		res.Status, res.ExitCode, res.Signal = sandbox.StatusKilled, -1, "SIGKILL"
		res.Reason = killedFor
	case exit.Phase != sandboxinit.PhaseExited && s.closing.Load():
		// Close killed init, and with it the interpreter, before init could
		// report an exit: the cell did not end, it was ended.
		res.Status, res.ExitCode, res.Signal = sandbox.StatusKilled, -1, "SIGKILL"
		res.Reason = "the session was closed while the cell ran"
	case usage.OOMKills > usage0.OOMKills:
		res.Status = sandbox.StatusMemoryLimit
		res.Reason, res.Restarted = s.restartAfterOOM()
	case exit.Signal != 0:
		res.Status = sandbox.StatusKilled
		res.Reason = "the interpreter was ended by " + res.Signal + "; the session is closed"
	default:
		res.Status = sandbox.StatusError
		res.Reason = fmt.Sprintf("the interpreter exited with code %d; the session is closed", exit.ExitCode)
	}
	if !res.Restarted {
		// The session is over: Done says so before the cell returns, so
		// that its caller, seeing the result, finds the session ended.
		s.end()
	}
	return res, nil
}
