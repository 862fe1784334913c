package sandboxinit

import (
	"errors"
	"fmt"
	"unsafe"

	"syscall"
)

// Constants of the seccomp(2) system call, which the syscall package
// predates.
const (
	seccompSetModeFilter   = 1
	seccompFilterFlagTSync = 1
	// prSetNoNewPrivs is PR_SET_NO_NEW_PRIVS (Linux 3.5).
	prSetNoNewPrivs = 38
)

// SeccompFilter is one assembled seccomp BPF program.
type SeccompFilter []syscall.SockFilter

// installSeccomp sets no_new_privs, without which a set-uid binary could
// shed the filters' effect by gaining privileges, and loads the filters on
// every thread of the process (TSYNC), so the Go runtime's threads and the
// program forked from them are all covered; or, if allThreads is false,
// on this thread alone, which forks the program (a zygote's init: see
// seccompAllThreads).
func installSeccomp(filters []SeccompFilter, allThreads bool) error {
	// An empty list is a host bug; a program must never start unfiltered.
	if len(filters) == 0 {
		return errors.New("no seccomp filter in the configuration: refusing to start the program unconfined")
	}
	if err := prctl(prSetNoNewPrivs, 1); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	var flags uintptr
	if allThreads {
		flags = seccompFilterFlagTSync
	}
	for _, f := range filters {
		prog := syscall.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
		_, _, errno := syscall.RawSyscall(sysSeccomp, seccompSetModeFilter,
			flags, uintptr(unsafe.Pointer(&prog)))
		if errno != 0 {
			return fmt.Errorf("load seccomp filter: %w", errno)
		}
	}
	return nil
}
