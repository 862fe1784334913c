package linux

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// Zygote slots (what Options.Warm keeps, unless Options.SingleRunWarm):
// a warm Python sandbox that serves many stateless runs, each a fork of
// one interpreter that imported the preload set once, instead of one run
// per sandbox and interpreter.
//
// The objection to a zygote in warm.go holds for one that sits outside
// the sandboxes, privileged to build each child's. This one sits inside a
// complete sandbox, one per slot, and starts after it is locked down:
// under seccomp, in the slot's cgroup and namespaces, with no capability,
// as a user no run has. It never runs user code. Who does what:
//
//   - The zygote forks on the host's request (a datagram on its request
//     socket carrying the run's stdin, stdout, stderr and a gate),
//     made as soon as the slot is ready for its next run (zygotefork.go):
//     the fork and the move into a cgroup are not on the run's path.
//     It holds two identities (sandboxinit's zygote.go): real and saved
//     uid and gid the slot's zygote user, effective the slot's run user.
//     The child makes all three the run user's with a plain setresuid,
//     which needs no privilege for an id the process holds; nothing was
//     granted for it, and no filter on arguments is needed. Against the
//     run the zygote is then another user: a signal needs the sender's
//     uid to match the target's real or saved uid (the zygote user's);
//     tracing it, or reading its /proc/<pid>/mem, needs all three of its
//     uids to match, and the zygote made itself non-dumpable besides.
//     What the kernel does allow on a match of effective uids (nice,
//     CPU affinity, scheduling policy, I/O priority of the zygote's
//     threads) is checked after every run: a change retires the slot.
//     The slot's /proc shows a process only those it may trace
//     (hidepid=invisible): a run sees neither the zygote nor init.
//   - The child becomes the run user for good at once, leads a session of
//     its own, takes the run's streams, closes the zygote's channel and
//     enters /work; the host (root, outside) moves it into the run's own
//     cgroup (the run's memory, process and CPU accounting); it reseeds
//     the random generators (Python's random and numpy's global state,
//     from the kernel's entropy, fork by fork; the str hash seed,
//     PYTHONHASHSEED's, is the zygote's and so shared by every run of a
//     slot), warms up, copies the pages of the zygote's memory the run's
//     path is known to write (which the zygote learned once, before any
//     run existed, by rehearsing that path in a fork of its own that ran
//     only the kernel's code: python_kernel.py's learn_run_pages; a
//     copy-on-write fault costs microseconds, in a virtual machine more,
//     and a preload of pandas makes the run's path write a hundred pages
//     and more), says it is ready on the gate (the host then takes
//     the run's CPU base and resets its memory peak), and waits on the
//     gate. When the request comes, the host sets the run's limits on the
//     cgroup (unless the last run's were the same), places the program
//     and files, and writes the request, code included, on the gate; the
//     child makes itself dumpable again, as any program is, and runs the
//     program as a warm run's is run.
//   - After the run the host kills what is left in the run's cgroup (the
//     slot's next run gets it, emptied, with its limits and counters
//     afresh: see resetZygote), and the slot's init (root inside the
//     sandbox) kills any process of the run user, removes System V IPC
//     objects and POSIX message queues, and replaces the tmpfs behind
//     /work, /tmp and /dev/shm with an empty one. Abstract unix sockets
//     and everything else a process holds end with the process. What
//     outlives it in the slot's network namespace (a TCP connection in
//     TIME_WAIT, loopback's counters) init cannot undo: a run that used
//     the network fails the reset (sandboxinit's netstate.go).
//   - A slot is retired after zygoteMaxRuns runs or zygoteMaxAge, and at
//     once after any anomaly: processes left running after the program
//     ended, an OOM kill, a change to the zygote, a reset that failed (a
//     run that used the network among them), a platform error.
//
// What runs of one slot share, beyond what every sandbox shares: the
// zygote's memory image (read-only to them: copy-on-write), so its
// address-space layout (ASLR is per exec, not per fork) and the str hash
// seed; and the slot's network namespace, whose loopback a run can bind
// while it lives, and which a run that used it leaves to no other run.
// Sessions keep their own interpreter.

// zygoteMaxRuns and zygoteMaxAge bound a zygote slot's service: it is
// retired after that many runs or that long, whichever comes first.
const (
	zygoteMaxRuns = 1000
	zygoteMaxAge  = 15 * time.Minute
)

// zygoteWait is how long a run waits for a zygote slot being reset after
// its last run before it is served otherwise.
const zygoteWait = 100 * time.Millisecond

// zygoteState is what a zygote slot keeps between runs.
type zygoteState struct {
	uid   int            // the zygote user; the run user is the sandbox's uid
	pid   int            // the zygote's pid, seen from the host
	runs  int            // runs served
	born  time.Time      // when the slot was built
	sched map[int]string // the scheduling state of each of the zygote's threads when it was ready (schedState)
	next  *forked        // the fork made for the next run
	// meminfo is the memory limit the sandbox's /proc/meminfo shows
	// (root's file, read-only to runs), 0 until a run wrote it.
	meminfo int64
}

// close ends the fork made for the next run, if any, and removes its
// cgroup; the sandbox is gone.
func (z *zygoteState) close() error {
	if z.next == nil {
		return nil
	}
	z.next.close()
	err := removeRunCgroup(z.next.cg)
	z.next = nil
	return err
}

// launchZygote builds a zygote slot: a sandbox, then a zygote in it that
// imports preload.
func (r *Runtime) launchZygote(preload []string) (*sandboxProc, error) {
	zuid, err := r.uids.Take()
	if err != nil {
		return nil, err
	}
	p, err := r.launchWith(r.defaultCgroupLimits, true)
	if err != nil {
		r.uids.Give(zuid)
		return nil, err
	}
	p.zygote = &zygoteState{uid: zuid, born: time.Now()}
	if err := r.bootZygote(p, preload); err != nil {
		return nil, errors.Join(err, p.release())
	}
	return p, nil
}

// bootZygote starts p's zygote and readies the slot for its first run.
func (r *Runtime) bootZygote(p *sandboxProc, preload []string) error {
	k, err := r.bootKernel(context.Background(), p, sandbox.DefaultLimits().WithDefaults(), nil, nil, zygoteKernel, preload)
	if err != nil {
		return err
	}
	p.kernel, p.zygote.pid = k, k.pid
	// The zygote put /dev/null in place of the sandbox's own streams:
	// every run has streams of its own.
	p.stdin.Close()
	go discardAll(p.stdout)
	go discardAll(p.stderr)
	// The slot's cgroup holds the zygote, a child for the moment it waits
	// to be moved into the run's cgroup, and that cgroup: its child, named
	// "run", so that a run sees itself at /run in /proc/self/cgroup (the
	// sandbox's cgroup namespace is rooted at the slot's), learning nothing
	// of the host's names. The run's own limits are exact; the slot's make
	// room for the largest a run may have beside the zygote.
	n, err := p.cg.pidsCurrent()
	if err != nil {
		return err
	}
	if err := p.cg.setLimits(cgroupLimits{
		MemoryBytes: sandbox.MaxLimits().MemoryBytes + r.defaultCgroupLimits.MemoryBytes,
		Pids:        n + 1 + sandbox.MaxLimits().Processes,
	}); err != nil {
		return err
	}
	if err := checkZygoteStatus(p.zygote.pid, p.zygote.uid, p.uid); err != nil {
		return err
	}
	if p.zygote.sched, err = schedState(p.zygote.pid); err != nil {
		return err
	}
	// What the preload wrote (as the run user: a cache in /tmp, say)
	// goes, as every run's will.
	if err := p.resetSandbox(); err != nil {
		return err
	}
	cg, err := newRunCgroup(p.cgName+"/run", runCgroupLimits(sandbox.DefaultLimits().WithDefaults()))
	if err != nil {
		return err
	}
	if err := p.prefork(cg); err != nil {
		return errors.Join(err, removeRunCgroup(cg))
	}
	return nil
}

// checkZygoteStatus checks, from /proc/<pid>/status, that the zygote,
// process pid, holds what keeps the run user from reaching it and it from
// reaching more than a run: real and saved ids zuid and effective (and
// file system) ids ruid, no supplementary group (see the comment at the
// top of this file); no capability in any set, the bounding set included
// (its start kept three, which it drops before it imports anything:
// python_kernel.py's become_zygote), so that nothing it or a fork of it
// executes can gain one; no_new_privs; and a seccomp filter (mode 2),
// which its init installed on the thread it was forked from.
func checkZygoteStatus(pid, zuid, ruid int) error {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	return zygoteStatusProblem(string(status), zuid, ruid)
}

// noCaps is an empty capability set as /proc/<pid>/status shows it.
const noCaps = "0000000000000000"

// zygoteStatusProblem checks status, the text of a zygote's
// /proc/<pid>/status, as checkZygoteStatus says; the error names every
// field that is not as it must be.
func zygoteStatusProblem(status string, zuid, ruid int) error {
	z, r := strconv.Itoa(zuid), strconv.Itoa(ruid)
	ids := z + " " + r + " " + z + " " + r
	want := map[string]string{
		"Uid": ids, "Gid": ids, "Groups": "",
		"CapInh": noCaps, "CapPrm": noCaps, "CapEff": noCaps, "CapBnd": noCaps, "CapAmb": noCaps,
		"NoNewPrivs": "1", "Seccomp": "2",
	}
	var problems []string
	for _, l := range strings.Split(status, "\n") {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		if w, ok := want[name]; ok {
			if got := strings.Join(strings.Fields(value), " "); got != w {
				problems = append(problems, fmt.Sprintf("%s is %q, want %q", name, got, w))
			}
			delete(want, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		problems = append(problems, name+" is missing")
	}
	if len(problems) > 0 {
		return fmt.Errorf("the zygote's status: %s", strings.Join(problems, "; "))
	}
	return nil
}

// discardAll reads f until its end.
func discardAll(f *os.File) {
	buf := make([]byte, 4096)
	for {
		if _, err := f.Read(buf); err != nil {
			return
		}
	}
}

// takeZygote returns a zygote slot for req if the runtime keeps them and
// req fits one: Python, the default disk size, rlimits no higher than the
// zygote's (a fork can only lower them), no environment variable the
// interpreter read at its start (startupEnv), no code policy and no
// network. Any memory and process
// limit fits: the run's cgroup is its own. A slot being reset is waited
// for, briefly (zygoteWait).
func (r *Runtime) takeZygote(ctx context.Context, req *sandbox.Request, lim sandbox.Limits) *sandboxProc {
	def := sandbox.DefaultLimits().WithDefaults()
	// A run under a code policy or with an allowlist takes the cold path,
	// which has both: the fork has closed the kernel's channel the
	// policy's findings come back on, and a slot's network namespace is
	// built without the proxy's listener.
	if r.zygotes == nil || req.Language != sandbox.Python || lim.DiskBytes != def.DiskBytes || startupEnv(req.Env) ||
		lim.FileSizeBytes > def.FileSizeBytes || lim.OpenFiles > def.OpenFiles || req.Rules != nil || !req.Network.IsZero() {
		return nil
	}
	return takeFrom(ctx, r.zygotes)
}

// recycleZygote resets slot p after a run in cgroup cg and gives it back
// to the pool, or retires it after an anomaly (not nil; its reason, if
// not retiredError, given by retireFor) or if it cannot serve again. No
// caller waits for it: what fails is counted and logged by the pool.
func (r *Runtime) recycleZygote(p *sandboxProc, cg runCgroup, anomaly error) {
	if anomaly == nil {
		anomaly = r.resetZygote(p, cg)
	}
	if anomaly != nil {
		r.zygotes.cleanupFailed(removeRunCgroup(cg))
		_ = r.zygotes.put(p, anomaly)
		return
	}
	_ = r.zygotes.put(p, nil)
}

// resetZygote checks that the run's cgroup is empty, has init reset the
// sandbox, checks that the zygote is as it was and may serve again, and
// forks the next run into the same cgroup, its limits a default run's
// again (and the run's once it comes: for a run with the default limits,
// nothing to write). A cgroup holds nothing of a run once
// empty but counters, which no run can read and each run starts from
// (execution.cpuBase, resetPeak); making and removing one per run would
// cost each run a millisecond of kernel work.
func (r *Runtime) resetZygote(p *sandboxProc, cg runCgroup) error {
	z := p.zygote
	if n, err := cg.pidsCurrent(); err != nil || n != 0 {
		return retireFor(retiredProcessLeft, fmt.Errorf("the run's cgroup holds %d tasks after the run (%v)", n, err))
	}
	if err := cg.setLimits(runCgroupLimits(sandbox.DefaultLimits().WithDefaults())); err != nil {
		return retireFor(retiredResetFailed, err)
	}
	if err := p.resetSandbox(); err != nil {
		return retireFor(retiredResetFailed, err)
	}
	if err := z.checkSched(); err != nil {
		return retireFor(retiredZygoteChanged, err)
	}
	z.runs++
	if z.runs >= zygoteMaxRuns {
		return retireFor(retiredMaxRuns, fmt.Errorf("the slot served its %d runs", z.runs))
	}
	if age := time.Since(z.born); age >= zygoteMaxAge {
		return retireFor(retiredMaxAge, fmt.Errorf("the slot served for %s", age.Round(time.Second)))
	}
	if err := p.prefork(cg); err != nil {
		return retireFor(retiredForkFailed, err)
	}
	return nil
}

// resetSandbox asks init to reset the sandbox (sandboxinit.Reset) and
// waits for its answer.
func (p *sandboxProc) resetSandbox() error {
	if err := sandboxinit.WriteMessage(p.config, &sandboxinit.Reset{}, nil); err != nil {
		return fmt.Errorf("ask for a reset: %w", err)
	}
	timer := time.NewTimer(setupTimeout)
	defer timer.Stop()
	select {
	case ev, ok := <-p.events:
		switch {
		case !ok:
			return errors.New("sandbox init ended")
		case ev.Phase != sandboxinit.PhaseReset:
			return fmt.Errorf("unexpected event %q from sandbox init", ev.Phase)
		case ev.Error != "":
			return fmt.Errorf("reset: %s", ev.Error)
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("the reset took longer than %s", setupTimeout)
	}
}

// runCgroupLimits are the limits of the cgroup of a run in a zygote slot
// with limits lim: it holds the run's processes alone.
func runCgroupLimits(lim sandbox.Limits) cgroupLimits {
	return cgroupLimits{MemoryBytes: lim.MemoryBytes, Pids: lim.Processes}
}

// removeRunCgroup kills what is left in a run's cgroup and removes it.
func removeRunCgroup(cg runCgroup) error {
	if cg == nil {
		return nil
	}
	var err error
	for range 50 {
		if err = cg.remove(); err == nil {
			return nil
		}
		_ = cg.kill()
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("remove a run's cgroup: %w", err)
}

// checkSched checks that no thread of the zygote has another scheduling
// state than it had when the zygote was ready. A thread may have ended
// (numpy's math library ends its threads before a fork, and starts them
// again when next used): no run can end one, as it cannot signal it.
func (z *zygoteState) checkSched() error {
	now, err := schedState(z.pid)
	if err != nil {
		return fmt.Errorf("the zygote's scheduling: %w", err)
	}
	for tid, st := range now {
		if was, ok := z.sched[tid]; ok && st != was {
			return fmt.Errorf("the scheduling of the zygote's thread %d changed during a run: from %s to %s", tid, was, st)
		}
	}
	return nil
}

// schedState describes what a process whose effective uid matches the
// zygote's may change of the zygote's threads: nice value, scheduling
// policy and priority (from stat), CPU affinity (from status) and I/O
// priority, thread by thread.
func schedState(pid int) (map[int]string, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	threads := map[int]string{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			return nil, err
		}
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			return nil, fmt.Errorf("task %d: no command in stat", tid)
		}
		f := strings.Fields(string(stat)[i+1:]) // f[n-3] is field n, from 3, the state
		if len(f) < 39 {
			return nil, fmt.Errorf("task %d: short stat", tid)
		}
		status, err := os.ReadFile(filepath.Join(dir, e.Name(), "status"))
		if err != nil {
			return nil, err
		}
		affinity := ""
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "Cpus_allowed:") {
				affinity = strings.TrimSpace(strings.TrimPrefix(l, "Cpus_allowed:"))
			}
		}
		ioprio, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, 1 /* IOPRIO_WHO_PROCESS */, uintptr(tid), 0)
		if errno != 0 {
			return nil, fmt.Errorf("task %d: ioprio_get: %w", tid, errno)
		}
		// Fields 18 (priority), 19 (nice), 40 (rt_priority), 41 (policy).
		threads[tid] = fmt.Sprintf("prio=%s,nice=%s,rt=%s,policy=%s,cpus=%s,io=%d", f[15], f[16], f[37], f[38], affinity, ioprio)
	}
	return threads, nil
}

// zygoteChild returns the host pid of the zygote's one child, which has
// pid nsPid in the sandbox's PID namespace.
func zygoteChild(zygotePid, nsPid int) (int, error) {
	pid, err := childOf(zygotePid)
	if err != nil {
		return 0, fmt.Errorf("the zygote's child: %w", err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "NSpid:" {
			if f[len(f)-1] != strconv.Itoa(nsPid) {
				return 0, fmt.Errorf("the zygote's child is pid %s in the sandbox, the zygote said %d", f[len(f)-1], nsPid)
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("process %d: no NSpid", pid)
}

// newSeqpacketPair returns the two ends of a unix socket pair of type
// SOCK_SEQPACKET, as r (the sandbox's) and w (the host's).
func newSeqpacketPair() (pipePair, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return pipePair{}, err
	}
	return pipePair{r: os.NewFile(uintptr(fds[0]), "requests"), w: os.NewFile(uintptr(fds[1]), "requests")}, nil
}
