package linux

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the directory, in every hierarchy, under which each run's
// cgroup is created: /crucible/<server pid>.<sequence>. The server's pid in
// the name lets a later server remove the cgroups of one that crashed.
const cgroupParent = "crucible"

// initThreadReserve is added to the pids limit while the sandbox's init
// builds the sandbox, alone in the run's cgroup: init is a Go program whose
// runtime threads count against pids.max like the program's processes do.
// Before the program is forked the limit is made exact (armPids).
const initThreadReserve = 8

// supervisorGroup is the cgroup, under cgroupParent, that holds the inits
// of running sandboxes once they have left their run's cgroup.
const supervisorGroup = "supervisor"

// runCgroup is the cgroup of one run: it caps memory and the number of
// processes of everything in the sandbox, measures CPU and peak memory, and
// can kill every process in it.
type runCgroup interface {
	// add moves the process pid (all its threads) into the cgroup.
	add(pid int) error
	// setLimits changes the limits of a cgroup created with others.
	setLimits(lim cgroupLimits) error
	// setPidsMax changes the pids limit alone.
	setPidsMax(n int64) error
	// pidsCurrent returns the number of tasks (processes and threads) the
	// pids controller counts in the cgroup now.
	pidsCurrent() (int64, error)
	// evict moves the process pid out of the run's cgroup, to the
	// supervisor group. Its children stay.
	evict(pid int) error
	// cpuTime returns the CPU time used by all processes so far.
	cpuTime() (time.Duration, error)
	// resetPeak starts peak-memory measurement afresh, where the cgroup
	// version allows it (v1); v2 keeps the peak since creation.
	resetPeak()
	// usage returns the run's totals once it has ended.
	usage() (cgroupUsage, error)
	// freeze stops every process in the cgroup, and returns once all have
	// stopped; a stopped process uses no CPU and writes nothing, and still
	// dies of SIGKILL (v2's freezer allows it; on v1 the processes are
	// stopped with SIGSTOP, see cgroupV1.freeze). thaw lets them run again.
	freeze() error
	thaw() error
	// kill sends SIGKILL to every process in the cgroup.
	kill() error
	// remove deletes the cgroup; it must be empty.
	remove() error
}

// cgroupUsage is what a cgroup measured over a run.
type cgroupUsage struct {
	CPU       time.Duration
	PeakBytes int64
	OOMKills  int64
}

// cgroupLimits are the limits a run's cgroup enforces.
type cgroupLimits struct {
	MemoryBytes int64
	Pids        int64
}

// newRunCgroup creates the cgroup for run name on whichever cgroup version
// the host uses.
func newRunCgroup(name string, lim cgroupLimits) (runCgroup, error) {
	path := "/" + cgroupParent + "/" + name
	if cgroups.Mode() == cgroups.Unified {
		return newCgroupV2(path, lim)
	}
	return newCgroupV1(path, lim)
}

// removeStaleCgroups deletes the cgroups left behind by crucible processes
// that are no longer alive (a crash, a kill -9). Cgroups of live processes,
// including other servers running beside this one, are left alone.
//
// Such a cgroup is normally empty: a sandbox's init dies with the crucible
// that started it (PDEATHSIG), and the kernel then kills the rest of its
// PID namespace. But a crucible that died while a v1 cgroup was frozen
// (for the moment cgroupV1.freeze or kill holds it) left processes that
// die of their pending SIGKILL only once thawed. So a stale cgroup is
// thawed, whatever it still holds is killed (it can only be a sandbox of
// the dead crucible: only crucible makes cgroups here), and it is removed
// once empty; the start waits at most staleDrainWait in all for the kernel
// to reap.
func removeStaleCgroups() {
	dirs := []string{filepath.Join(cgroupRoot, cgroupParent)} // one per hierarchy
	freezer := dirs[0]
	if cgroups.Mode() != cgroups.Unified {
		dirs = nil
		for _, c := range v1Controllers {
			dirs = append(dirs, filepath.Join(cgroupRoot, c, cgroupParent))
		}
		freezer = filepath.Join(cgroupRoot, "freezer", cgroupParent)
	}
	stale := map[string]bool{}
	for _, dir := range dirs {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			owner, _, ok := strings.Cut(e.Name(), ".")
			pid, err := strconv.Atoi(owner)
			if ok && err == nil && e.IsDir() && !processAlive(pid) {
				stale[e.Name()] = true
			}
		}
	}
	deadline := time.Now().Add(staleDrainWait)
	for name := range stale {
		group := filepath.Join(freezer, name)
		_ = os.WriteFile(filepath.Join(group, "freezer.state"), []byte("THAWED"), 0) // v1 only
		for {
			pids := cgroupProcs(group)
			if len(pids) == 0 || time.Now().After(deadline) {
				break
			}
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, dir := range dirs {
			// rmdir fails on a cgroup that still holds processes (one
			// that did not die in time): it is left for the next start.
			// A zygote slot's cgroup holds its runs' ("run"), removed
			// first.
			subs, _ := os.ReadDir(filepath.Join(dir, name))
			for _, s := range subs {
				if s.IsDir() {
					_ = syscall.Rmdir(filepath.Join(dir, name, s.Name()))
				}
			}
			_ = syscall.Rmdir(filepath.Join(dir, name))
		}
	}
}

// staleDrainWait bounds how long a start waits for the processes of a
// dead crucible's cgroup to be reaped.
const staleDrainWait = 2 * time.Second

// cgroupProcs returns the pids listed in dir's cgroup.procs.
func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// readKeyed reads one "key value" line of a cgroup file such as
// memory.events or cpu.stat.
func readKeyed(file, key string) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), " ")
		if ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %q line", file, key)
}

// writeInt writes an integer to a cgroup file.
func writeInt(file string, v int64) error {
	return os.WriteFile(file, []byte(strconv.FormatInt(v, 10)), 0)
}

// readInt reads a cgroup file holding a single integer.
func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
