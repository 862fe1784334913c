package linux

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox/lang"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// A warm sandbox is built before its request is known, with the default
// limits. What of the limits lives outside its processes the host sets
// from outside when a request takes it, to the request's values exactly:
// the cgroup's memory and pids limits (cgroupLimits), the size of the
// working tmpfs (the disk limit) and the /proc/meminfo that shows the
// memory limit. The rlimits live inside the interpreter, which can lower
// its own but never raise them: see takeWarm and takeWarmSession.

// resizeDisk sets the size of the working tmpfs of the sandbox whose init
// is initPid (/work, /tmp and /dev/shm share it) to bytes, as init's
// finishRoot sizes it for a cold request. The host reconfigures the
// filesystem through the sandbox's own mount of it (fspick), without
// entering the sandbox's mount namespace. A size below what the
// filesystem already holds is refused by the kernel.
func resizeDisk(initPid int, bytes int64) error {
	dir, err := openSandboxDir(initPid, lang.WorkDir)
	if err != nil {
		return err
	}
	defer dir.close()
	fs, err := unix.Fspick(dir.fd, "", unix.FSPICK_EMPTY_PATH|unix.FSPICK_CLOEXEC|unix.FSPICK_NO_AUTOMOUNT|unix.FSPICK_SYMLINK_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("pick the working tmpfs: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "size", strconv.FormatInt(bytes, 10)); err != nil {
		return fmt.Errorf("size the working tmpfs: %w", err)
	}
	if err := unix.FsconfigReconfigure(fs); err != nil {
		return fmt.Errorf("size the working tmpfs to %d bytes: %w", bytes, err)
	}
	return nil
}

// showMemory makes the sandbox's /proc/meminfo show memoryBytes. A zygote
// slot's file keeps what its last run's showed (no run can write it):
// written once for a stream of runs with the same limit.
func (p *sandboxProc) showMemory(memoryBytes int64) error {
	if p.zygote != nil && p.zygote.meminfo == memoryBytes {
		return nil
	}
	if err := writeMeminfo(p.cmd.Process.Pid, memoryBytes); err != nil {
		return err
	}
	if p.zygote != nil {
		p.zygote.meminfo = memoryBytes
	}
	return nil
}

// writeMeminfo makes the sandbox's /proc/meminfo show memoryBytes, as
// init's setMeminfo does for a cold request. The file is a bind mount of
// a root-owned file of init's staging tmpfs over the sandbox's /proc,
// which only mounts can change, and the program cannot mount.
func writeMeminfo(initPid int, memoryBytes int64) error {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/root/proc/meminfo", initPid), os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open the sandbox's /proc/meminfo: %w", err)
	}
	if _, err := f.WriteString(sandboxinit.SyntheticMeminfo(memoryBytes)); err != nil {
		f.Close()
		return fmt.Errorf("write the sandbox's /proc/meminfo: %w", err)
	}
	return f.Close()
}
