package sandboxinit

import (
	"syscall"

	"github.com/crucible-sandbox/crucible/sandbox/linux/cloexec"
)

// Security: a descriptor open without close-on-exec in the host process
// that starts init (one crucible inherited from its shell, say) is open in
// init too, and would be in the program init starts: a directory handle
// from which the program walks ".." to the host's root, or a writable
// host file, outside every mount the sandbox makes. Init therefore closes,
// first thing, every descriptor it did not get from the protocol
// (closeInherited), and marks every descriptor close-on-exec again just
// before it starts the program (start), so that the program, a kernel or
// a zygote starts with exactly the descriptors startProgram hands it: its
// stdio, and a kernel's channel (KernelInFD, KernelOutFD) as 3 and 4.

// lastProtocolFD is the highest descriptor the host hands init.
const lastProtocolFD = KernelOutFD

// closeInherited closes every descriptor above the protocol's (3 to
// lastProtocolFD) that lacks close-on-exec, and then marks every
// descriptor from 3 close-on-exec, the protocol's included. A descriptor
// init inherited lacks the flag (an exec never sets it), while every one
// the Go runtime and the packages linked before this one opened has it:
// those stay open, for their owners. The list comes from /proc/self/fd,
// which init still sees as the host's /proc; if it cannot be read,
// marking every descriptor close-on-exec still keeps the inherited ones
// from the program.
func closeInherited() error {
	if fds, err := cloexec.Descriptors(); err == nil {
		for _, fd := range fds {
			if fd <= lastProtocolFD {
				continue
			}
			if set, err := cloexec.IsCloseOnExec(fd); err == nil && !set {
				syscall.Close(fd)
			}
		}
	}
	return cloexec.From(3)
}
