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
	gate  *os.File    // the host's end of the gate: the request, then end-of-file
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

// fork has p's zygote fork and moves the child into cg.
func (p *sandboxProc) fork(cg runCgroup) (*forked, error) {
	pipes, err := newPipes(4) // stdin, stdout, stderr, gate
	if err != nil {
		return nil, err
	}
	theirs := []*os.File{pipes[0].r, pipes[1].w, pipes[2].w, pipes[3].r}
	f := &forked{cg: cg, stdio: [3]*os.File{pipes[0].w, pipes[1].r, pipes[2].r}, gate: pipes[3].w}
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
	if err != nil {
		f.close()
		return nil, err
	}
	return f, nil
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
