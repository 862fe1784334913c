package sandboxinit

import (
	"os"
	"strconv"
	"syscall"
)

// Security: a descriptor open without close-on-exec in the host process
// that starts init (one crucible inherited from its shell, say) is open in
// init too, and would be in the program init starts: a directory handle
// from which the program walks ".." to the host's root, or a writable
// host file, outside every mount the sandbox makes. Init therefore closes,
// first thing, every descriptor it did not get from the protocol
// (closeInherited), and marks every descriptor close-on-exec before it
// starts the program (closeOnExecAll), so that the program, a kernel or a
// zygote starts with exactly the descriptors os.StartProcess is given:
// its stdio, and a kernel's channel (KernelInFD, KernelOutFD) as 3 and 4.

// sysCloseRange is close_range(2)'s number, the same on amd64 and arm64;
// the syscall package has no constant for it.
const sysCloseRange = 436

// closeRangeCloexec is CLOSE_RANGE_CLOEXEC (linux/close_range.h): mark the
// range close-on-exec instead of closing it.
const closeRangeCloexec = 1 << 2

// lastProtocolFD is the highest descriptor the host hands init.
const lastProtocolFD = KernelOutFD

// closeInherited closes every descriptor above the protocol's (3 to
// lastProtocolFD) that lacks close-on-exec, and then marks every
// descriptor from 3 close-on-exec. A descriptor init inherited lacks the
// flag (an exec never sets it), while every one the Go runtime and the
// packages linked before this one opened have it: those stay open, for
// their owners. The list comes from /proc/self/fd, which init still sees
// as the host's /proc; if it cannot be read, marking every descriptor
// close-on-exec still keeps the inherited ones from the program.
func closeInherited() error {
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil || fd <= lastProtocolFD {
				continue
			}
			flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
			if errno == 0 && flags&syscall.FD_CLOEXEC == 0 {
				syscall.Close(fd)
			}
		}
	}
	return closeOnExecAll()
}

// closeOnExecAll marks every descriptor from 3 up close-on-exec.
func closeOnExecAll() error {
	if _, _, errno := syscall.RawSyscall(sysCloseRange, 3, uintptr(^uint32(0)), closeRangeCloexec); errno != 0 {
		return os.NewSyscallError("close_range", errno)
	}
	return nil
}
