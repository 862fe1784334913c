package linux

import (
	"fmt"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox. The program already
// runs as an unprivileged user with no capabilities, so most of these would
// fail anyway; the filter is a second wall that also shrinks the kernel
// attack surface an exploit could use (the kernel code behind these calls
// runs before any permission check can stop it). The list follows the
// Docker and bubblewrap defaults, and adds io_uring, whose rings bypass
// seccomp for the operations they carry.
var deniedSyscalls = []string{
	// Debugging and reading other processes' memory.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	// Mounts and filesystem views, including the new mount API.
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
	"move_mount", "open_tree", "mount_setattr",
	// Namespaces: a new user namespace would give the program a root of its
	// own to attack the kernel with.
	"unshare", "setns",
	// Kernel code and tracing.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"bpf", "perf_event_open", "lookup_dcookie",
	// The kernel keyring is shared by everything on the host.
	"keyctl", "add_key", "request_key",
	// Host administration.
	"acct", "swapon", "swapoff", "reboot", "quotactl", "syslog", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm", "uselib", "sysfs", "ustat",
	// Page-fault handling from user space: a favourite tool of kernel
	// exploits for winning races.
	"userfaultfd",
	// File handles bypass the mount view (the "shocker" container escape).
	"open_by_handle_at", "name_to_handle_at",
	// io_uring performs I/O that seccomp never sees.
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// Filesystem-wide notification, which needs privileges the program lacks.
	"fanotify_init",
}

// namespaceCloneFlags are the clone(2) flags that create namespaces. clone
// with any of them fails with EPERM, so fork and threads work but no new
// namespace (above all a user namespace) can be made.
const namespaceCloneFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// sandboxPolicy is the deny-list policy: allow by default, EPERM for the
// calls above, and ENOSYS for clone3, whose flags live in memory a filter
// cannot read; C libraries fall back to clone, which the filter can check.
func sandboxPolicy() seccomp.Policy {
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: deniedSyscalls},
			{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{
				Name: "clone",
				Conditions: seccomp.ArgumentConditions{{
					Argument: 0, Operation: seccomp.BitsSet, Value: namespaceCloneFlags,
				}},
			}}},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
		},
	}
}

// assembleSeccomp builds the sandbox's two filters: the architecture check
// first, then the deny-list policy. The host assembles them once per
// Runtime; each sandbox's init only loads them.
func assembleSeccomp() ([]sandboxinit.SeccompFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	// A 64-bit x86 process can still enter the kernel through the 32-bit
	// `int 0x80` gate, where every call has another number: a deny-list
	// keyed on the native numbers would not see them. The library's filter
	// lets foreign architectures through to its default action (allow), so
	// this filter, stacked in front of it, kills any foreign-ABI call.
	archCheck := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	}
	policy := sandboxPolicy()
	denyList, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp policy: %w", err)
	}
	var filters []sandboxinit.SeccompFilter
	for _, insts := range [][]bpf.Instruction{archCheck, denyList} {
		raw, err := bpf.Assemble(insts)
		if err != nil {
			return nil, fmt.Errorf("seccomp assemble: %w", err)
		}
		f := make(sandboxinit.SeccompFilter, len(raw))
		for i, ins := range raw {
			f[i] = syscall.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
		}
		filters = append(filters, f)
	}
	return filters, nil
}
