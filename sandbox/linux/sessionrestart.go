package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	units "github.com/docker/go-units"
	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// A cell that runs out of memory gets its interpreter killed by the
// kernel's OOM killer: the memory cgroup's limit is the session's, and
// the interpreter, which holds the cell's objects, is the largest process
// in it. Nothing can be saved of its state, but the rest of the session
// can: the sandbox, its files (/work, /tmp, /dev/shm), its uid, cgroup
// and limits. So the session starts a fresh interpreter in the same
// sandbox (sandboxinit's restart.go), the cell ends as memory_limit with
// Restarted set and a reason that says what was lost, and the next cell
// runs in the fresh interpreter. Only a death the cgroup counts as an
// OOM kill is restarted: an interpreter that exits, or is killed by
// anything else, still ends its session, as its code asked.
//
// When only a child of the interpreter was killed (a subprocess), the
// interpreter survives and the cell ends as memory_limit with its
// variables kept (finishCell).

// restartAfterOOM restarts the session's interpreter after the running
// cell ran it out of memory, and returns the cell's reason and whether
// the restart succeeded. A restart that fails kills the sandbox: the
// session is closed. cellMu is held.
func (s *Session) restartAfterOOM() (reason string, restarted bool) {
	limit := units.BytesSize(float64(s.lim.MemoryBytes))
	if err := s.restart(); err != nil {
		s.kill()
		return fmt.Sprintf("the cell ran out of memory (limit %s) and the interpreter was killed; "+
			"it could not be restarted (%v), so the session is closed", limit, err), false
	}
	// As after any cell: the session's processes are stopped shortly,
	// until the next cell (see Session).
	s.stopWhenIdle()
	return fmt.Sprintf("the cell ran out of memory (limit %s): the interpreter was killed and restarted, and every "+
		"variable and import was lost; the files in the working directory are kept", limit), true
}

// survivedOOM is the reason of a cell the interpreter answered although
// the cell ran out of memory: the cgroup's OOM killer killed another of
// its processes (oomKilled), or an allocation failed and the cell raised
// MemoryError; "" when neither happened.
func survivedOOM(oomKilled bool, cellErr *sandbox.ExecError, limit int64) string {
	const kept = "; the interpreter survived and every variable is kept"
	switch {
	case oomKilled:
		return "the cell ran out of memory (limit " + units.BytesSize(float64(limit)) + ") and a process it started was killed" + kept
	case cellErr != nil && cellErr.Type == "MemoryError":
		return "the cell ran out of memory (limit " + units.BytesSize(float64(limit)) + "): an allocation failed with MemoryError" + kept
	}
	return ""
}

// restartWait bounds a restart: the interpreter's start, the import of
// what the session preloads, and its setup.
const restartWait = setupTimeout

// restart starts a fresh kernel in the session's sandbox, whose kernel has
// exited: init is put back into the run's cgroup (the kernel it forks
// lands there, under the session's process limit), asked to open the new
// kernel's pipes, whose host ends are taken from it (pidfd_getfd), and to
// start the kernel; then init leaves the cgroup again, the kernel greets
// and is set up with the session's environment and rlimits, as a warm
// session's is. What the restart costs is billed to no cell. cellMu is
// held.
func (s *Session) restart() error {
	p := s.p
	if s.closing.Load() || !p.alive() {
		return errors.New("the sandbox is gone")
	}
	initPid := p.cmd.Process.Pid
	if err := p.cg.add(initPid); err != nil {
		return fmt.Errorf("put init back into the cgroup: %w", err)
	}
	p.evicted = false
	if err := p.armPids(s.lim.Processes); err != nil {
		return err
	}
	deadline := time.NewTimer(restartWait)
	defer deadline.Stop()
	if err := sandboxinit.WriteMessage(p.config, sandboxinit.Restart{}, nil); err != nil {
		return fmt.Errorf("ask init to restart: %w", err)
	}
	ev, err := nextEvent(p, deadline, sandboxinit.PhasePipes)
	if err != nil {
		return err
	}
	files, err := takeFds(initPid, ev.Fds)
	if err != nil {
		return err
	}
	if err := sandboxinit.WriteMessage(p.config, sandboxinit.Restart{Taken: true}, nil); err != nil {
		closeFiles(files)
		return fmt.Errorf("tell init the pipes are taken: %w", err)
	}
	closeFiles([]*os.File{p.stdin, p.stdout, p.stderr, p.toKernel, p.fromKernel}) // the dead kernel's
	p.stdin, p.stdout, p.stderr, p.toKernel, p.fromKernel = files[0], files[1], files[2], files[3], files[4]
	if _, err := nextEvent(p, deadline, sandboxinit.PhaseStarted); err != nil {
		return err
	}
	x := &execution{p: p, lim: s.lim}
	if err := x.leaveCgroup(); err != nil {
		return err
	}
	k, err := awaitGreeting(context.Background(), p, deadline)
	if err != nil {
		return err
	}
	p.kernel = k
	if err := setupKernel(p, s.env, s.lim); err != nil {
		return err
	}
	if err := s.attachKernel(k); err != nil {
		return err
	}
	return nil
}

// nextEvent waits for init's next event, which must be of phase want.
func nextEvent(p *sandboxProc, deadline *time.Timer, want string) (sandboxinit.Event, error) {
	select {
	case ev, ok := <-p.events:
		switch {
		case !ok:
			return ev, errors.New("sandbox init ended")
		case ev.Phase == sandboxinit.PhaseFailed:
			return ev, errors.New(ev.Error)
		case ev.Phase != want:
			return ev, fmt.Errorf("init reported %q, want %q", ev.Phase, want)
		}
		return ev, nil
	case <-deadline.C:
		return sandboxinit.Event{}, fmt.Errorf("init did not report %q within %s", want, restartWait)
	}
}

// takeFds duplicates init's descriptors fds into this process.
//
// Security: pidfd_getfd needs the right to trace init (PTRACE_MODE_ATTACH),
// which the host, root, has and no process of the sandbox has; init names
// descriptors of its own, which only it and the host can reach.
func takeFds(initPid int, fds []int) ([]*os.File, error) {
	if len(fds) != 5 {
		return nil, fmt.Errorf("init named %d pipes, want 5", len(fds))
	}
	pidfd, err := unix.PidfdOpen(initPid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open init: %w", err)
	}
	defer unix.Close(pidfd)
	files := make([]*os.File, 0, len(fds))
	for _, fd := range fds {
		n, err := unix.PidfdGetfd(pidfd, fd, 0)
		if err == nil {
			// Non-blocking, so that os.NewFile makes it pollable, with
			// deadlines, as os.Pipe's ends are: a cell's request is
			// written with one (runCell).
			err = unix.SetNonblock(n, true)
		}
		if err != nil {
			if n > 0 {
				unix.Close(n)
			}
			closeFiles(files)
			return nil, fmt.Errorf("pidfd_getfd init's fd %d: %w", fd, err)
		}
		files = append(files, os.NewFile(uintptr(n), fmt.Sprintf("restart-%d", fd)))
	}
	return files, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
