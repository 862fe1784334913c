package linux

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/crucible-sandbox/crucible/internal/uidrange"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// cloneFlags are the namespaces every sandbox gets. The cgroup namespace is
// made later, by init, once it is inside the run's cgroup.
const cloneFlags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
	syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// sandboxSeq numbers the sandboxes of this process, for their cgroups'
// names. It is shared by every Runtime in the process: two runtimes with
// counters of their own would give two sandboxes the same cgroup, and the
// first to end would remove the other's.
var sandboxSeq atomic.Uint64

// setupTimeout bounds how long building a sandbox may take before it is
// declared a platform failure.
const setupTimeout = 30 * time.Second

// sandboxProc is one sandbox seen from the host: its init process, built up
// to sandboxinit.PhaseReady and waiting for a request, its cgroup, and the host's ends
// of its pipes. It serves one run (or one session) and is then released,
// unless it is a zygote slot, which is reset and serves the next run
// (zygote.go).
type sandboxProc struct {
	cmd        *exec.Cmd
	cg         runCgroup
	stdin      *os.File // the program's standard input
	stdout     *os.File // the program's standard output
	stderr     *os.File // the program's standard error
	config     *os.File // messages to init
	toKernel   *os.File // a session kernel's requests
	fromKernel *os.File // a session kernel's replies
	events     <-chan sandboxinit.Event
	waited     <-chan struct{} // closed once init has exited and been reaped
	kernel     *kernelProc     // the kernel running in it, for a warm sandbox
	evicted    bool            // init has left the run's cgroup
	zygote     *zygoteState    // for a zygote slot: what it keeps between runs
	cgName     string          // the name of cg, under cgroupParent
	// uid is the sandbox's own user and group id, held from launch until
	// release has seen every process of the sandbox gone (see uids.go).
	uid  int
	uids *uidrange.Allocator
	// pool is the pool it was taken from, if any: retire puts it back.
	pool sandboxPool[*sandboxProc]
}

// launch starts a sandbox's init in new namespaces, inside a new cgroup with
// the limits lim, with a uid of its own, and waits until it has built the
// sandbox.
func (r *Runtime) launch(lim cgroupLimits) (*sandboxProc, error) {
	return r.launchWith(lim, false)
}

// launchWith is launch; requestSocket makes the channel that carries a
// kernel's requests a socket (of SOCK_SEQPACKET), as a zygote needs to be
// passed each run's file descriptors, not a pipe.
func (r *Runtime) launchWith(lim cgroupLimits, requestSocket bool) (*sandboxProc, error) {
	uid, err := r.uids.Take()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%d.%d", os.Getpid(), sandboxSeq.Add(1))
	cg, err := newRunCgroup(name, lim)
	if err != nil {
		r.uids.Give(uid)
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	p, err := r.startInit(cg, uid, requestSocket)
	if err != nil {
		return nil, err
	}
	p.cgName = name
	if err := p.awaitReady(); err != nil {
		return nil, errors.Join(err, p.release())
	}
	return p, nil
}

// startInit starts init, moves it into cg and sends it the base config,
// made the sandbox's with uid. Failing, it removes cg and gives uid back.
func (r *Runtime) startInit(cg runCgroup, uid int, requestSocket bool) (*sandboxProc, error) {
	pipes, err := newPipes(7)
	if err == nil && requestSocket {
		pipes[5].r.Close()
		pipes[5].w.Close()
		pipes[5], err = newSeqpacketPair()
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("create pipes: %w", err), r.discard(cg, uid))
	}
	stdin, stdout, stderr, config, events := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4]
	toKernel, fromKernel := pipes[5], pipes[6]
	cmd := &exec.Cmd{
		Path:       r.initPath,
		Args:       []string{sandboxinit.Arg0},
		Env:        []string{"GOMAXPROCS=1", "GOGC=off"}, // nothing of the host's environment; init is short-lived and allocates little
		Stdin:      stdin.r,
		Stdout:     stdout.w,
		Stderr:     stderr.w,
		ExtraFiles: []*os.File{config.r, events.w, toKernel.r, fromKernel.w},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: cloneFlags,
			// If the host dies, its sandboxes die with it.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	err = cmd.Start()
	for _, f := range []*os.File{stdin.r, stdout.w, stderr.w, config.r, events.w, toKernel.r, fromKernel.w} {
		f.Close()
	}
	p := &sandboxProc{cmd: cmd, cg: cg, stdin: stdin.w, stdout: stdout.r, stderr: stderr.r, config: config.w,
		toKernel: toKernel.w, fromKernel: fromKernel.r, uid: uid, uids: r.uids}
	if err != nil {
		p.closePipes()
		events.r.Close()
		return nil, errors.Join(fmt.Errorf("start sandbox init: %w", err), r.discard(cg, uid))
	}
	waited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(waited)
	}()
	p.waited = waited
	evs := make(chan sandboxinit.Event, 4)
	go readEvents(events.r, evs)
	p.events = evs
	// init must be in the cgroup before it receives its config: until
	// then it only waits on the pipe, so nothing escapes the limits.
	if err := cg.add(cmd.Process.Pid); err != nil {
		return nil, errors.Join(fmt.Errorf("join cgroup: %w", err), p.release())
	}
	base := r.base
	base.UID, base.GID = uid, uid
	base.Root = append(r.base.Root[:len(r.base.Root):len(r.base.Root)], identityEntries(uid)...)
	if err := sandboxinit.WriteMessage(config.w, &base, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("send config: %w", err), p.release())
	}
	return p, nil
}

// discard removes the cgroup of a sandbox whose init never started and
// gives its uid back. A cgroup that cannot be removed may hold a process
// of the uid: the uid is then never given back.
func (r *Runtime) discard(cg runCgroup, uid int) error {
	if err := cg.remove(); err != nil {
		return fmt.Errorf("remove cgroup: %w", err)
	}
	r.uids.Give(uid)
	return nil
}

// awaitReady waits for init to report that the sandbox is built.
func (p *sandboxProc) awaitReady() error {
	timer := time.NewTimer(setupTimeout)
	defer timer.Stop()
	select {
	case ev, ok := <-p.events:
		switch {
		case !ok:
			return fmt.Errorf("sandbox init exited while building the sandbox (%v)", p.exitState())
		case ev.Phase == sandboxinit.PhaseReady:
			return nil
		case ev.Phase == sandboxinit.PhaseFailed:
			return fmt.Errorf("build sandbox: %s", ev.Error)
		}
		return fmt.Errorf("unexpected event %q from sandbox init", ev.Phase)
	case <-timer.C:
		return fmt.Errorf("building the sandbox took longer than %s", setupTimeout)
	}
}

// armPids sets the run's process limit for the program about to be forked:
// processes, plus the tasks init has in the run's cgroup now. It must be
// called while init waits for the request (after PhaseReady, before the
// RunConfig is sent), when init is the cgroup's only process.
//
// Security: limits.processes must hold from the program's first fork. Init
// stays in the run's cgroup until the host has learnt that the program
// started and moved it out (leaveCgroup); until then init's threads count
// against pids.max beside the program's, and a program that forks at once
// could take any headroom left for init: with a fixed reserve it could have
// had several processes more than its limit, for good, since lowering
// pids.max kills nothing. Counting init's tasks exactly leaves the program
// exactly processes. Init's count can only grow from here (the Go runtime
// never ends an idle thread; a thread ends only with a goroutine locked to
// it, and init's one locked goroutine ends with the process), and a thread
// init adds takes one of the program's places: the program may be allowed
// fewer than processes until init has left, never more.
func (p *sandboxProc) armPids(processes int64) error {
	n, err := p.cg.pidsCurrent()
	if err != nil {
		return fmt.Errorf("count sandbox init's tasks: %w", err)
	}
	if err := p.cg.setPidsMax(processes + n); err != nil {
		return fmt.Errorf("set the process limit: %w", err)
	}
	return nil
}

// alive reports whether init is still running.
func (p *sandboxProc) alive() bool {
	select {
	case <-p.waited:
		return false
	default:
		return true
	}
}

func (p *sandboxProc) exitState() string {
	select {
	case <-p.waited:
		return p.cmd.ProcessState.String()
	case <-time.After(time.Second):
		return "still running"
	}
}

// kill ends the sandbox: killing init, PID 1 of the sandbox's PID
// namespace, makes the kernel kill every other process in it.
func (p *sandboxProc) kill() { _ = p.cmd.Process.Kill() }

// release kills what is left of the sandbox, waits until init has been
// reaped, closes the host's pipe ends, removes the cgroup and gives the
// sandbox's uid back. The kernel has killed and reaped every process of
// the PID namespace by the time init is reaped; the cgroup is killed
// anyway, so that a bug elsewhere can never leave a process running or the
// cgroup behind.
//
// Security: the uid goes back only once init has been reaped and the
// cgroup removed, which the kernel refuses while it holds a process: no
// process of this sandbox can then share the uid with the next sandbox to
// take it. If the cgroup cannot be removed, the uid is kept for good.
func (p *sandboxProc) release() error {
	if p.zygote != nil {
		// A zygote slot's cgroup holds its runs': that goes first, once
		// the sandbox is dead.
		p.kill()
		<-p.waited
		if err := p.zygote.close(); err != nil {
			return err
		}
	}
	if err := p.removeCgroup(); err != nil {
		return err
	}
	if p.uids != nil { // once: a second release must not give back a uid taken again since
		p.uids.Give(p.uid)
		if p.zygote != nil {
			p.uids.Give(p.zygote.uid)
		}
		p.uids = nil
	}
	return nil
}

// removeCgroup kills the sandbox, waits for init, closes the pipes and
// removes the cgroup.
func (p *sandboxProc) removeCgroup() error {
	// Once init has left the run's cgroup and reported the program's end,
	// the cgroup is empty: remove it while init is being killed rather
	// than after. (If something is still in it, removal fails and is
	// retried below, once init and its namespace are gone.)
	var early chan error
	if p.evicted {
		early = make(chan error, 1)
		go func() { early <- p.cg.remove() }()
	}
	p.kill()
	<-p.waited
	p.closePipes()
	if early != nil && <-early == nil {
		return nil
	}
	if err := p.cg.remove(); err == nil {
		return nil
	}
	_ = p.cg.kill()
	var err error
	for i := 0; i < 50; i++ {
		if err = p.cg.remove(); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup: %w", err)
}

func (p *sandboxProc) closePipes() {
	for _, f := range []*os.File{p.stdin, p.stdout, p.stderr, p.config, p.toKernel, p.fromKernel} {
		_ = f.Close()
	}
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

// readEvents decodes init's events until its end of the pipe closes.
func readEvents(r *os.File, out chan<- sandboxinit.Event) {
	defer close(out)
	defer r.Close()
	s := bufio.NewScanner(r)
	for s.Scan() {
		var ev sandboxinit.Event
		if json.Unmarshal(s.Bytes(), &ev) == nil {
			out <- ev
		}
	}
}
