package sandboxinit

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SeccompFilter is one assembled seccomp BPF program.
type SeccompFilter []unix.SockFilter

// installSeccomp sets no_new_privs, without which a set-uid binary could
// shed the filters' effect by gaining privileges, and loads the filters on
// every thread of the process (TSYNC), so the Go runtime's threads and the
// program forked from them are all covered.
func installSeccomp(filters []SeccompFilter) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	for _, f := range filters {
		prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
			unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
		if errno != 0 {
			return fmt.Errorf("load seccomp filter: %w", errno)
		}
	}
	return nil
}
