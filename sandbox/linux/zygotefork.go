package linux

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// forked is a fork of a slot's zygote made ahead of the run it will be:
// the run user already, in the run's own cgroup, waiting on its gate. A
// fork and the move into a cgroup cost milliseconds (cgroup v1 makes
// every migration wait for an RCU grace period): made between runs, they
// are not on any run's path.
type forked struct {
	cg    runCgroup
	stdio [3]*os.File // the host's ends of the run's stdin, stdout and stderr
	// gate is the host's end of the gate, a stream socket: the fork says
	// on it that it is ready (its warm-up over), the host writes the
	// request on it, then ends it.
	gate *os.File
	// cpuBase is the cgroup's CPU time once the fork was ready, and so
	// when its run starts: read, and the memory peak reset, between runs.
	cpuBase time.Duration
}

// forkReady is what a fork writes on its gate once it is ready.
const forkReady = 'r'

// newGatePair returns the two ends of a gate, a unix stream socket pair:
// r the fork's, w the host's, which does not block a thread.
func newGatePair() (pipePair, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return pipePair{}, err
	}
	if err := unix.SetNonblock(fds[1], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return pipePair{}, err
	}
	return pipePair{r: os.NewFile(uintptr(fds[0]), "gate"), w: os.NewFile(uintptr(fds[1]), "gate")}, nil
}

// close closes the host's ends; a fork whose gate closes before a
// request came exits.
func (f *forked) close() {
	for _, file := range append(f.stdio[:], f.gate) {
		file.Close()
	}
}

// prefork has slot p's zygote fork the next run into cgroup cg, and keeps
// the fork as p.zygote.next. Failing, p must be retired and cg removed.
func (p *sandboxProc) prefork(cg runCgroup) error {
	f, err := p.fork(cg)
	if err != nil {
		return err
	}
	p.zygote.next = f
	return nil
}

// fork has p's zygote fork, moves the child into cg, and waits until it
// is ready to take its run (readyRun).
func (p *sandboxProc) fork(cg runCgroup) (*forked, error) {
	pipes, err := newPipes(3) // stdin, stdout, stderr
	if err != nil {
		return nil, err
	}
	gate, err := newGatePair()
	if err != nil {
		for _, pp := range pipes {
			pp.r.Close()
			pp.w.Close()
		}
		return nil, err
	}
	theirs := []*os.File{pipes[0].r, pipes[1].w, pipes[2].w, gate.r}
	f := &forked{cg: cg, stdio: [3]*os.File{pipes[0].w, pipes[1].r, pipes[2].r}, gate: gate.w}
	fds := make([]int, len(theirs))
	for i, file := range theirs {
		fds[i] = int(file.Fd())
	}
	err = unix.Sendmsg(int(p.toKernel.Fd()), []byte(`{"op":"fork"}`), unix.UnixRights(fds...), nil, 0)
	for _, file := range theirs {
		file.Close()
	}
	if err != nil {
		f.close()
		return nil, fmt.Errorf("ask the zygote to fork: %w", err)
	}
	pid, err := p.awaitFork()
	if err == nil {
		var child int
		if child, err = zygoteChild(p.zygote.pid, pid); err == nil {
			err = cg.add(child)
		}
	}
	if err == nil {
		err = f.readyRun()
	}
	if err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// readyRun waits, for setupTimeout at most, until the fork says it is
// ready (it runs only the kernel's code until its request comes), then
// takes the run's CPU base from its cgroup and resets its memory peak:
// neither is on the run's path, and the run's figures leave the fork's
// warm-up out.
func (f *forked) readyRun() error {
	if err := f.gate.SetReadDeadline(time.Now().Add(setupTimeout)); err != nil {
		return err
	}
	var b [1]byte
	if _, err := f.gate.Read(b[:]); err != nil {
		return fmt.Errorf("the fork did not say it was ready: %w", err)
	}
	if b[0] != forkReady {
		return fmt.Errorf("the fork said %q, not that it was ready", b[0])
	}
	cpu, err := f.cg.cpuTime()
	if err != nil {
		return err
	}
	f.cpuBase = cpu
	f.cg.resetPeak()
	return nil
}

// awaitFork waits for the zygote to report a fork, returning the child's
// pid in the sandbox.
func (p *sandboxProc) awaitFork() (int, error) {
	timer := time.NewTimer(setupTimeout)
	defer timer.Stop()
	select {
	case rep, ok := <-p.kernel.replies.replies:
		switch {
		case !ok:
			return 0, fmt.Errorf("the zygote's channel broke: %v", p.kernel.replies.err)
		case rep.Fork == nil || rep.Fork.Pid <= 0:
			return 0, fmt.Errorf("the zygote did not fork: %+v", rep.Error)
		}
		return rep.Fork.Pid, nil
	case <-timer.C:
		return 0, fmt.Errorf("the zygote did not fork within %s", setupTimeout)
	}
}
