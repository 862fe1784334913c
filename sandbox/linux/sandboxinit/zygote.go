package sandboxinit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// A zygote slot (the host's zygote.go) is a sandbox whose program is a
// Python zygote: an interpreter that forks itself once per run and never
// runs user code. Init's part in it is small and done here:
//
//   - It starts the zygote as root, from a thread whose capability bounding
//     set holds only CAP_SETGID, CAP_SETUID and CAP_SETPCAP (boundsKept),
//     so that the interpreter starts with those three alone. Before it
//     imports anything the zygote empties its bounding set and takes two
//     identities: real and saved ids the slot's zygote user, effective ids
//     the run user (BaseConfig.UID); leaving uid 0 clears its capabilities
//     (python_kernel.py's become_zygote). A fork can so make all three ids
//     the run user's without any privilege (an unprivileged setresuid may
//     pick any id the process holds), while a process of the run user can
//     neither signal the zygote (the kernel compares the sender's ids with
//     the target's real and saved ids only), nor trace it or read its
//     memory (that needs all three of the target's ids to match, and the
//     zygote is not dumpable).
//
//     The interpreter cannot be started with those ids instead: an execve
//     whose effective uid is not the real one is a set-uid exec to the
//     kernel (AT_SECURE), after which the C library drops variables such
//     as TMPDIR and LD_LIBRARY_PATH and secure_getenv fails, in the zygote
//     and in every run forked from it; and execve makes the saved ids the
//     effective ones.
//   - Between two runs it resets what the run user could leave behind
//     inside the sandbox on the host's request (Reset): see resetSlot;
//     a run that used the network fails the reset (netstate.go).

// Reset asks the init of a zygote slot, on the config pipe, to make the
// sandbox ready for another run; init answers with an Event of
// PhaseReset, whose Error, if set, names what it found or could not do:
// the host then retires the slot.
type Reset struct{}

// PhaseReset reports that a zygote slot has been reset (Reset).
const PhaseReset = "reset"

// Capabilities (linux/capability.h) a zygote's start needs: to set its
// ids, and to empty its bounding set first.
const (
	capSetgid  = 6
	capSetuid  = 7
	capSetpcap = 8
)

// boundsKept returns the capabilities init keeps in the bounding set of
// the thread that forks cfg's program: none, but for a zygote those it
// needs to take its ids.
func boundsKept(cfg *RunConfig) []int {
	if cfg.ZygoteUID == 0 {
		return nil
	}
	return []int{capSetgid, capSetuid, capSetpcap}
}

// seccompAllThreads says whether init filters all its threads before it
// starts cfg's program, as it does but for a zygote. A zygote's init
// mounts and unmounts between runs (resetSlot), which the filter forbids;
// it filters the thread that forks the zygote, and so the zygote and its
// runs, and leaves its other threads as they were: root's, running init's
// own code, which no process of the sandbox can reach (init is pid 1 and
// root, and the zygote's ids are users').
func seccompAllThreads(cfg *RunConfig) bool { return cfg.ZygoteUID == 0 }

// hideOtherUsers remounts the sandbox's /proc so that a process sees
// there only the processes it may trace (hidepid=invisible): a run sees
// its own, not the zygote nor init, as a cold run's program sees no
// interpreter but its own.
func hideOtherUsers() error {
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "hidepid=invisible"); err != nil {
		return fmt.Errorf("remount /proc with hidepid: %w", err)
	}
	return nil
}

// programCommand returns the executable and argv that start cfg's
// program, and the credential to fork it with: the sandbox user's, or
// root's for a zygote, which takes its own ids (see above).
func programCommand(base *BaseConfig, cfg *RunConfig) (string, []string, *syscall.Credential) {
	if cfg.ZygoteUID != 0 {
		return cfg.Argv[0], cfg.Argv, nil
	}
	return cfg.Argv[0], cfg.Argv, &syscall.Credential{Uid: uint32(base.UID), Gid: uint32(base.GID), Groups: []uint32{}}
}

// serveResets answers the host's Reset requests until the host closes the
// config pipe.
func serveResets(base *BaseConfig, run *RunConfig, config *os.File, send func(Event)) {
	defer config.Close()
	var netBase netState // the network namespace once the zygote was ready (see netstate.go)
	for {
		var req Reset
		if ReadMessage(config, &req) != nil {
			return
		}
		ev := Event{Phase: PhaseReset}
		if err := resetSlot(base, run, &netBase); err != nil {
			ev.Error = err.Error()
		}
		send(ev)
	}
}

// resetSlot undoes, after a run, what the run user can leave in the
// sandbox beyond the run's cgroup, which the host has killed and emptied:
// processes (there should be none: any found is an error), System V IPC
// objects and POSIX message queues of the IPC namespace, and the files of
// /work, /tmp and /dev/shm, whose tmpfs is replaced by an empty one. What
// it cannot undo, the run's traces in the network namespace, is an error
// (checkNet). The first reset, after the zygote's preload, records the
// namespace as the runs must leave it in *netBase.
func resetSlot(base *BaseConfig, run *RunConfig, netBase *netState) error {
	var errs []error
	if n := killUser(base.UID); n > 0 {
		errs = append(errs, fmt.Errorf("%d processes of the run user outlived its cgroup", n))
	}
	if err := removeSysVIPC(); err != nil {
		errs = append(errs, err)
	}
	for _, m := range []string{"/work", "/tmp", "/dev/shm"} {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	if err := removeMessageQueues("/dev/shm"); err != nil {
		errs = append(errs, err)
	}
	if err := mountScratch(base, run); err != nil {
		errs = append(errs, err)
	}
	if err := checkNet(netBase); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkNet reads the network namespace's state and records it in *base
// if *base is nil; otherwise it fails if the state differs from *base.
func checkNet(base *netState) error {
	st, err := readNetState()
	if err != nil {
		return err
	}
	if *base == nil {
		*base = st
		return nil
	}
	return st.changedSince(*base)
}

// killUser kills every live process whose real uid is uid, until none is
// left, and returns how many it found at first. The zygote's real uid is
// its own: it is never one of them.
func killUser(uid int) int {
	first := -1
	for range 100 {
		pids := processesOf(uid)
		if first < 0 {
			first = len(pids)
		}
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return first
}

// processesOf lists the processes of the namespace, zombies aside, whose
// real uid is uid.
func processesOf(uid int) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	want := strconv.Itoa(uid)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := os.Open("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var real, state string
		s := bufio.NewScanner(f)
		for s.Scan() {
			k, v, _ := strings.Cut(s.Text(), ":")
			switch k {
			case "State":
				state = strings.TrimSpace(v)
			case "Uid":
				if fs := strings.Fields(v); len(fs) > 0 {
					real = fs[0]
				}
			}
		}
		f.Close()
		if real == want && !strings.HasPrefix(state, "Z") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ipcRmid is IPC_RMID (linux/ipc.h).
const ipcRmid = 0

// removeSysVIPC removes every System V shared memory segment, message
// queue and semaphore set of the sandbox's IPC namespace: only runs make
// them.
func removeSysVIPC() error {
	var errs []error
	for _, k := range []struct {
		file string
		trap uintptr
	}{{"shm", syscall.SYS_SHMCTL}, {"msg", syscall.SYS_MSGCTL}, {"sem", syscall.SYS_SEMCTL}} {
		b, err := os.ReadFile("/proc/sysvipc/" + k.file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, l := range lines[1:] { // a header, then key, id, ...
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			id, err := strconv.Atoi(f[1])
			if err != nil {
				continue
			}
			var errno syscall.Errno
			if k.trap == syscall.SYS_SEMCTL {
				_, _, errno = syscall.RawSyscall6(k.trap, uintptr(id), 0, ipcRmid, 0, 0, 0)
			} else {
				_, _, errno = syscall.RawSyscall(k.trap, uintptr(id), ipcRmid, 0)
			}
			if errno != 0 && errno != syscall.EINVAL && errno != syscall.EIDRM {
				errs = append(errs, fmt.Errorf("remove System V %s %d: %w", k.file, id, errno))
			}
		}
	}
	return errors.Join(errs...)
}

// removeMessageQueues removes every POSIX message queue of the sandbox's
// IPC namespace, listing them on an mqueue filesystem mounted for the
// moment at dir (an empty mount point, never seen by a run).
func removeMessageQueues(dir string) error {
	if err := syscall.Mount("mqueue", dir, "mqueue", scratchFlags|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount mqueue: %w", err)
	}
	ents, err := os.ReadDir(dir)
	for _, e := range ents {
		if rerr := os.Remove(path.Join(dir, e.Name())); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if uerr := syscall.Unmount(dir, syscall.MNT_DETACH); uerr != nil {
		err = errors.Join(err, fmt.Errorf("unmount mqueue: %w", uerr))
	}
	return err
}

// mountScratch mounts a fresh tmpfs of run.DiskBytes for /work, /tmp and
// /dev/shm, as buildRoot and finishRoot made the first: one filesystem,
// so that the disk limit caps the three together, its directories the
// run user's, /tmp seeded.
func mountScratch(base *BaseConfig, run *RunConfig) error {
	const scratch = "/work" // mounted here first, then covered by its own work directory
	opts := fmt.Sprintf("size=%d,nr_inodes=65536,mode=0755", run.DiskBytes)
	if err := syscall.Mount("tmpfs", scratch, "tmpfs", scratchFlags, opts); err != nil {
		return fmt.Errorf("mount working tmpfs: %w", err)
	}
	if err := makeScratchDirs(base, scratch); err != nil {
		return err
	}
	if base.TmpSeed != "" {
		if err := seedDir(base.TmpSeed, path.Join(scratch, "tmp"), base.UID, base.GID, 0); err != nil {
			return fmt.Errorf("seed /tmp from %s: %w", base.TmpSeed, err)
		}
	}
	for _, b := range [][2]string{{"tmp", "/tmp"}, {"shm", "/dev/shm"}, {"work", "/work"}} {
		if err := bindInto("/", path.Join(scratch, b[0]), b[1], scratchFlags, false); err != nil {
			return err
		}
	}
	return nil
}
