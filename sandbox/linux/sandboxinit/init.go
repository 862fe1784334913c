package sandboxinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox/linux/cloexec"
)

// Arg0 is the argv[0] under which the host starts the sandbox's init:
// crucible-init, or the host's own binary (see package initexe). A Go
// program cannot safely create namespaces for itself (its runtime is
// multithreaded), so the host clones a child into new namespaces and that
// child, running this package, builds the sandbox.
const Arg0 = "crucible-sandbox-init"

// Hostname is the host name inside every sandbox.
const Hostname = "sandbox"

// init takes the process over when it was started as a sandbox's init.
// In crucible-init nothing else is linked. In the whole crucible binary Go
// initialises, before this package, every package whose import path sorts
// earlier and is ready (some 70, about 10 ms): the reason crucible-init
// exists.
func init() {
	if len(os.Args) == 0 || os.Args[0] != Arg0 {
		return
	}
	// Everything init does that is per-thread (capability bounding set,
	// cgroup namespace, the fork of the program) must happen on one thread;
	// the program is forked from this same thread.
	runtime.LockOSThread()
	os.Exit(runInit())
}

// runInit is the sandbox's PID 1. It builds the sandbox, starts the program
// as the unprivileged user, reaps every process, and exits when the program
// does. Its exit is what guarantees that no process survives the run: when
// the first process of a PID namespace dies, the kernel kills every other
// process in it.
func runInit() int {
	// Nothing but the protocol's descriptors stays open, and none of
	// them, the pipes to the host included, leaks into the program (see
	// fds.go).
	inheritedErr := closeInherited()
	events := os.NewFile(EventFD, "events")
	send := func(ev Event) {
		b, _ := json.Marshal(ev)
		_, _ = events.Write(append(b, '\n'))
	}
	fail := func(err error) int {
		var missing *missingInterpreterError
		send(Event{Phase: PhaseFailed, Error: err.Error(), Missing: errors.As(err, &missing)})
		return 1
	}
	if inheritedErr != nil {
		return fail(inheritedErr)
	}
	config := os.NewFile(ConfigFD, "config")
	var base BaseConfig
	if err := ReadMessage(config, &base); err != nil {
		return fail(err)
	}
	if err := prepare(&base); err != nil {
		return fail(err)
	}
	send(Event{Phase: PhaseReady})
	child, run, err := start(&base, config)
	if err != nil {
		return fail(err)
	}
	send(Event{Phase: PhaseStarted})
	if run.ZygoteUID != 0 {
		go serveResets(&base, run, config, send)
	}
	// The OOM killer should pick the program, not its init: losing init
	// would turn a memory_limit into a confusing killed status.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("-1000"), 0)
	ws, err := reap(child)
	if err != nil {
		return fail(err)
	}
	endProgram()
	send(exitEvent(ws))
	if run.Restartable {
		serveRestarts(&base, run, config, send)
	}
	// The sandbox stays mounted, with no process but init, until the host
	// has collected the files the program produced and kills init (or the
	// host dies and PDEATHSIG does).
	for {
		time.Sleep(time.Hour)
	}
}

// endProgram ends what is left of the program once it has exited: the
// run is over when the program exits, so whatever it left running
// (background jobs, daemons that double-forked) dies now, before the host
// looks at the working directory, so the files it reads are final. As
// PID 1, kill(-1) reaches every other process of the namespace and
// nothing outside it.
func endProgram() {
	_ = syscall.Kill(-1, syscall.SIGKILL)
	reapAll()
}

// exitEvent is the PhaseExited event of a program that ended with ws.
func exitEvent(ws syscall.WaitStatus) Event {
	ev := Event{Phase: PhaseExited, ExitCode: ws.ExitStatus()}
	if ws.Signaled() {
		ev.Signal = int(ws.Signal())
	}
	return ev
}

// missingInterpreterError reports that the root filesystem lacks the
// language's interpreter.
type missingInterpreterError struct{ path string }

func (e *missingInterpreterError) Error() string {
	return fmt.Sprintf("interpreter %s is not in the sandbox's root filesystem", e.path)
}

// prepare builds what every run needs, before any request is known.
func prepare(base *BaseConfig) error {
	// The host has moved this process into the run's cgroup before sending
	// the config. A cgroup namespace made now is rooted there, so the
	// program sees itself at "/" and learns nothing of the host's groups.
	if err := syscall.Unshare(syscall.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("cgroup namespace: %w", err)
	}
	if err := buildRoot(base); err != nil {
		return err
	}
	if err := syscall.Sethostname([]byte(base.Hostname)); err != nil {
		return fmt.Errorf("hostname: %w", err)
	}
	// The network namespace starts with only a loopback interface, down.
	// Bringing it up lets programs talk to themselves over 127.0.0.1;
	// nothing else is reachable, the host's own loopback included.
	if err := loopbackUp(); err != nil {
		return err
	}
	return nil
}

// start waits for the request, completes the sandbox, locks it down and
// starts the program, returning its pid and the request. The config pipe
// stays open for a zygote, whose init serves Reset requests on it.
func start(base *BaseConfig, config *os.File) (int, *RunConfig, error) {
	var run RunConfig
	if err := ReadMessage(config, &run); err != nil {
		return 0, nil, err
	}
	if err := finishRoot(base, &run, config); err != nil {
		return 0, nil, err
	}
	switch {
	case run.Restartable: // the host's Restart requests come on it (restart.go)
	case run.ZygoteUID == 0:
		config.Close()
	default:
		if err := hideOtherUsers(); err != nil {
			return 0, nil, err
		}
	}
	if err := setRlimits(&run); err != nil {
		return 0, nil, err
	}
	if err := dropCapabilityBounds(boundsKept(&run)...); err != nil {
		return 0, nil, err
	}
	// Whatever init opened since it started, the program gets exactly
	// the descriptors startProgram hands it.
	if err := cloexec.From(3); err != nil {
		return 0, nil, err
	}
	if err := installSeccomp(base.Seccomp, seccompAllThreads(&run)); err != nil {
		return 0, nil, err
	}
	pid, err := startProgram(base, &run, programFiles{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		kernelIn: os.NewFile(KernelInFD, "kernel-in"), kernelOut: os.NewFile(KernelOutFD, "kernel-out"),
	})
	return pid, &run, err
}

// programFiles are the program's ends of its pipes: its standard streams
// and, for a kernel, its channel.
type programFiles struct {
	stdin, stdout, stderr, kernelIn, kernelOut *os.File
}

func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer syscall.Close(fd)
	if err := setInterfaceFlags(fd, "lo", syscall.IFF_UP|syscall.IFF_LOOPBACK|syscall.IFF_RUNNING); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// setRlimits sets the per-process limits the program inherits. CPU time
// gets a soft limit (SIGXCPU) and a hard one a second later (SIGKILL) for
// programs that catch SIGXCPU; the host also watches the cgroup's total.
//
// RLIMIT_NPROC counts the processes and threads of a user across the whole
// host. Every sandbox has a uid of its own (see the host's uids.go), so it
// is a per-sandbox cap, set to at least the run's process limit (a warm
// interpreter's is the largest a run may ask): a second wall behind the
// cgroup's pids limit, the exact one. Left inherited from the
// host (root's, thousands) it would be one more quota shared by sandboxes.
func setRlimits(cfg *RunConfig) error {
	limits := []struct {
		name     string
		resource int
		soft     uint64
		hard     uint64
	}{
		{"cpu", syscall.RLIMIT_CPU, cfg.CPUSeconds, cfg.CPUSeconds + 1},
		{"fsize", syscall.RLIMIT_FSIZE, cfg.FileSizeBytes, cfg.FileSizeBytes},
		{"nofile", syscall.RLIMIT_NOFILE, cfg.OpenFiles, cfg.OpenFiles},
		{"core", syscall.RLIMIT_CORE, 0, 0},
		{"nproc", rlimitNPROC, cfg.Processes, cfg.Processes},
	}
	for _, l := range limits {
		if l.soft == 0 && (l.resource == syscall.RLIMIT_CPU || l.resource == rlimitNPROC) {
			continue // a session's CPU is limited per cell, from the cgroup; no process limit was given
		}
		// syscall.Setrlimit, not unix's: the Go runtime remembers the
		// RLIMIT_NOFILE it saw at start and restores it in children unless
		// the change goes through the syscall package.
		if err := syscall.Setrlimit(l.resource, &syscall.Rlimit{Cur: l.soft, Max: l.hard}); err != nil {
			return fmt.Errorf("rlimit %s: %w", l.name, err)
		}
	}
	return nil
}

// dropCapabilityBounds empties this thread's capability bounding set,
// but for the capabilities keep, and its inheritable set. The program is
// forked from this thread; when it switches to the sandbox user it loses
// its permitted and effective capabilities, and with an empty bounding set
// no exec (of a file with capabilities, or a set-uid one) can give any
// back. (Only a zygote's start keeps any, and drops them before it
// executes the zygote: see boundsKept.)
func dropCapabilityBounds(keep ...int) error {
	for c := 0; ; c++ {
		if slices.Contains(keep, c) {
			continue
		}
		err := prctl(syscall.PR_CAPBSET_DROP, uintptr(c))
		if errors.Is(err, syscall.EINVAL) {
			break // past the last capability this kernel knows
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from bounding set: %w", c, err)
		}
	}
	return clearInheritableCaps()
}

// startProgram forks the program as the sandbox user (a zygote: see
// programCommand), in a session of its own (no controlling terminal to
// inject keystrokes into), in the working directory, with exactly the
// configured environment.
func startProgram(base *BaseConfig, cfg *RunConfig, pf programFiles) (int, error) {
	// Only the program holds the pipes once it started: when it and its
	// children are gone, the host sees end-of-file.
	defer func() {
		for _, f := range []*os.File{pf.stdin, pf.stdout, pf.stderr, pf.kernelIn, pf.kernelOut} {
			f.Close()
		}
	}()
	if _, err := os.Stat(cfg.Argv[0]); err != nil {
		return 0, &missingInterpreterError{path: cfg.Argv[0]}
	}
	files := []*os.File{pf.stdin, pf.stdout, pf.stderr}
	if cfg.Channel {
		files = append(files, pf.kernelIn, pf.kernelOut)
	}
	exe, argv, cred := programCommand(base, cfg)
	attr := &os.ProcAttr{
		Dir:   cfg.Dir,
		Env:   cfg.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Credential: cred, Setsid: true},
	}
	p, err := os.StartProcess(exe, argv, attr)
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", cfg.Argv[0], err)
	}
	return p.Pid, nil
}

// reapAll reaps children until none is left.
func reapAll() {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, 0, nil)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// reap waits for children, reaping every orphan the PID namespace hands to
// init, until the program itself exits.
func reap(child int) (syscall.WaitStatus, error) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return ws, fmt.Errorf("wait for the program: %w", err)
		case pid == child && (ws.Exited() || ws.Signaled()):
			return ws, nil
		}
	}
}
