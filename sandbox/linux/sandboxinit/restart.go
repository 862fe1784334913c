package sandboxinit

import (
	"errors"
	"fmt"
	"os"
)

// A session's kernel (RunConfig.Restartable) can be started again in the
// same sandbox after it exited: the host asks for it when the kernel was
// killed for running out of memory, so that the session keeps its files,
// its uid and its cgroup and only loses the interpreter's state.
//
// The restarted kernel is as the first was started: forked from init's
// one locked thread (whose capability bounding set is empty and which,
// like all init's threads, is under the seccomp filter: the fork and exec
// are calls the filter allows the program too), as the sandbox user, with
// the same argv, environment and rlimits. Nothing of the old kernel is
// left: init killed and reaped every process of the namespace when it
// exited (endProgram). Its pipes are new: the old ones may still hold
// what the dead kernel wrote half of, or a request it never read. The
// host cannot pass descriptors on the config pipe, so init opens the
// pipes and the host takes its ends from init with pidfd_getfd, which
// only a process allowed to trace init (root on the host) may do.
//
// The host must have put init back into the run's cgroup before it asks,
// so that the kernel forked is in it, and moves it out again once the
// kernel started, as at the first start.

// Restart is a message from the host on the config pipe of a sandbox
// whose restartable program has exited. The first, Taken unset, asks init
// to open the next program's pipes: init answers PhasePipes naming the
// host's ends. The second, Taken set, says the host holds them: init
// closes its copies, starts the program, and answers PhaseStarted (or
// PhaseFailed).
type Restart struct {
	Taken bool `json:"taken,omitempty"`
}

// serveRestarts restarts the program each time the host asks, until the
// host closes the config pipe or a restart fails (init reports it and
// waits to be killed). It runs on init's locked thread.
func serveRestarts(base *BaseConfig, run *RunConfig, config *os.File, send func(Event)) {
	defer config.Close()
	for {
		var req Restart
		if ReadMessage(config, &req) != nil || req.Taken {
			return
		}
		child, err := restartProgram(base, run, config, send)
		if err != nil {
			send(Event{Phase: PhaseFailed, Error: "restart: " + err.Error()})
			return
		}
		send(Event{Phase: PhaseStarted})
		ws, err := reap(child)
		if err != nil {
			send(Event{Phase: PhaseFailed, Error: err.Error()})
			return
		}
		endProgram()
		send(exitEvent(ws))
	}
}

// restartProgram opens the program's pipes, waits for the host to take
// its ends, and starts the program on the others.
func restartProgram(base *BaseConfig, run *RunConfig, config *os.File, send func(Event)) (int, error) {
	var ends [5][2]*os.File // read end, write end
	closeAll := func() {
		for _, e := range ends {
			for _, f := range e {
				if f != nil {
					f.Close()
				}
			}
		}
	}
	for i := range ends {
		r, w, err := os.Pipe() // close-on-exec: the program gets only what startProgram maps
		if err != nil {
			closeAll()
			return 0, fmt.Errorf("pipe: %w", err)
		}
		ends[i] = [2]*os.File{r, w}
	}
	// stdin and the requests flow to the program, the rest from it.
	hostEnds := []*os.File{ends[0][1], ends[1][0], ends[2][0], ends[3][1], ends[4][0]}
	fds := make([]int, len(hostEnds))
	for i, f := range hostEnds {
		fds[i] = int(f.Fd())
	}
	send(Event{Phase: PhasePipes, Fds: fds})
	var taken Restart
	err := ReadMessage(config, &taken)
	for _, f := range hostEnds {
		f.Close()
	}
	if err != nil || !taken.Taken {
		closeAll()
		return 0, errors.Join(errors.New("the host did not take the pipes"), err)
	}
	return startProgram(base, run, programFiles{
		stdin: ends[0][0], stdout: ends[1][1], stderr: ends[2][1], kernelIn: ends[3][0], kernelOut: ends[4][1],
	})
}
