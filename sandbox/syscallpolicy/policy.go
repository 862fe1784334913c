// Package syscallpolicy is the sandbox's system-call policy: the calls a
// sandboxed program may make, those refused with EPERM, and the argument
// rules of the few calls that are allowed only with some arguments.
// Everything else fails with ENOSYS, so a call the kernel adds later is
// refused until it is reviewed and listed here, and C libraries fall back
// to older calls as they do on an older kernel.
//
// The native runtime compiles the policy into its seccomp filter; the
// conformance suite surveys every call from inside a sandbox and checks the
// outcome against the same lists. The allow-list starts from Docker's
// default profile (moby/profiles seccomp/default.json) for a container
// without capabilities, less what no interpreter needs (see omitted).
package syscallpolicy

import "slices"

// hot are the calls interpreters make most: every program of any language
// needs them (rest are the others).
var hot = []string{
	"read", "write", "futex", "mmap", "munmap", "mprotect", "madvise", "brk",
	"close", "openat", "newfstatat", "fstat", "statx", "lseek", "pread64",
	"getdents64", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn",
	"ioctl", "fcntl", "poll", "ppoll", "epoll_wait", "epoll_pwait",
	"clock_gettime", "clock_nanosleep", "nanosleep", "sched_yield",
	"getpid", "gettid", "getrandom", "readlink", "access", "wait4",
}

// rest are the other calls allowed without condition, by subject.
var rest = []string{
	// Files and directories.
	"open", "creat", "openat2", "close_range", "readv", "writev", "pwrite64",
	"preadv", "pwritev", "preadv2", "pwritev2", "stat", "lstat", "statfs",
	"fstatfs", "faccessat", "faccessat2", "readlinkat", "getdents", "getcwd",
	"chdir", "fchdir", "mkdir", "mkdirat", "rmdir", "rename", "renameat",
	"renameat2", "link", "linkat", "symlink", "symlinkat", "unlink", "unlinkat",
	"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown",
	"fchownat", "umask", "truncate", "ftruncate", "fallocate", "fadvise64",
	"readahead", "fsync", "fdatasync", "sync", "syncfs", "sync_file_range",
	"flock", "dup", "dup2", "dup3", "pipe", "pipe2", "splice", "tee",
	"vmsplice", "sendfile", "copy_file_range", "cachestat", "utime", "utimes",
	"utimensat", "futimesat", "mknod", "mknodat", "memfd_create",
	"getxattr", "lgetxattr", "fgetxattr", "getxattrat", "listxattr",
	"llistxattr", "flistxattr", "listxattrat", "setxattr", "lsetxattr",
	"fsetxattr", "setxattrat", "removexattr", "lremovexattr", "fremovexattr",
	"removexattrat", "inotify_init", "inotify_init1", "inotify_add_watch",
	"inotify_rm_watch",
	// Memory.
	"mremap", "msync", "mincore", "mlock", "mlock2", "munlock", "mlockall",
	"munlockall", "remap_file_pages", "pkey_alloc", "pkey_free",
	"pkey_mprotect", "membarrier", "mseal", "map_shadow_stack",
	// Processes and threads (clone is in ArgumentChecked).
	"fork", "vfork", "execve", "execveat", "exit", "exit_group", "waitid",
	"kill", "tkill", "tgkill", "getppid", "getpgid", "setpgid", "getpgrp",
	"getsid", "setsid", "set_tid_address", "set_robust_list",
	"get_robust_list", "rseq", "futex_waitv", "futex_wake", "futex_wait",
	"futex_requeue", "arch_prctl", "prctl", "capget", "capset",
	"pidfd_open", "pidfd_send_signal", "restart_syscall",
	// uretprobe is entered from the kernel's own return-probe trampoline;
	// the kernel lets it past seccomp in any case.
	"uretprobe",
	// Credentials: only ever the sandbox user's own (no capabilities).
	"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
	"getgroups", "setuid", "setgid", "setreuid", "setregid", "setresuid",
	"setresgid", "setfsuid", "setfsgid", "setgroups",
	// Time and timers.
	"clock_getres", "gettimeofday", "time", "alarm", "getitimer",
	"setitimer", "timer_create", "timer_settime", "timer_gettime",
	"timer_getoverrun", "timer_delete", "timerfd_create", "timerfd_settime",
	"timerfd_gettime", "times",
	// Signals.
	"rt_sigpending", "rt_sigtimedwait", "rt_sigqueueinfo",
	"rt_tgsigqueueinfo", "rt_sigsuspend", "sigaltstack", "signalfd",
	"signalfd4", "pause",
	// Scheduling and resources.
	"sched_getaffinity", "sched_setaffinity", "sched_getparam",
	"sched_setparam", "sched_getscheduler", "sched_setscheduler",
	"sched_get_priority_max", "sched_get_priority_min",
	"sched_rr_get_interval", "sched_getattr", "sched_setattr", "getpriority",
	"setpriority", "ioprio_get", "ioprio_set", "getcpu", "getrlimit",
	"setrlimit", "prlimit64", "getrusage", "sysinfo", "uname",
	// Waiting for events.
	"select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
	"epoll_pwait2", "eventfd", "eventfd2",
	// Sockets (socket and socketpair are in ArgumentChecked).
	"bind", "listen", "accept", "accept4", "connect", "getsockname",
	"getpeername", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg",
	"recvmmsg", "shutdown", "setsockopt", "getsockopt",
	// System V and POSIX IPC, private to the sandbox's IPC namespace.
	"shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop",
	"semctl", "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink",
	"mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
	// Calls that only take rights away from the caller.
	"seccomp", "landlock_create_ruleset", "landlock_add_rule",
	"landlock_restrict_self",
}

// omitted are Docker's unconditional calls left out here (they get ENOSYS),
// each because no interpreter of the sandbox needs it and it is kernel
// code a program could otherwise reach: the legacy AIO interface (io_*;
// glibc's POSIX AIO uses threads), modify_ldt and set_thread_area/
// get_thread_area (16-bit and 32-bit segment tricks), memfd_secret,
// process_mrelease, fanotify_mark (fanotify_init is denied), statmount and
// listmount (the mount table is in /proc/self/mountinfo), epoll_ctl_old and
// epoll_wait_old (never implemented on x86-64). They are kept as a list so
// that a test can tell an omission from an oversight.
var omitted = []string{
	"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents",
	"io_pgetevents", "modify_ldt", "set_thread_area", "get_thread_area",
	"memfd_secret", "process_mrelease", "fanotify_mark", "statmount",
	"listmount", "epoll_ctl_old", "epoll_wait_old",
}

// denied fail with EPERM. The program runs as an unprivileged user with no
// capabilities, so most of these would fail anyway; the filter is a second
// wall that also shrinks the kernel attack surface an exploit could use
// (the kernel code behind these calls runs before any permission check can
// stop it). They get EPERM rather than ENOSYS because they exist and a
// program should be told it may not use them. The list follows Docker's
// and bubblewrap's defaults, and adds io_uring, whose rings bypass seccomp
// for the operations they carry.
var denied = []string{
	// Debugging other processes and reaching into their memory or files.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"process_madvise",
	// Mounts and filesystem views, including the new mount API.
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
	"move_mount", "open_tree", "open_tree_attr", "mount_setattr",
	// Namespaces: a new user namespace would give the program a root of its
	// own to attack the kernel with.
	"unshare", "setns",
	// Kernel code and tracing.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"bpf", "perf_event_open", "lookup_dcookie",
	// The kernel keyring is shared by everything on the host.
	"keyctl", "add_key", "request_key",
	// Host administration.
	"acct", "swapon", "swapoff", "reboot", "quotactl", "quotactl_fd", "syslog", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"sethostname", "setdomainname",
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

// Allowed returns every call allowed without condition.
func Allowed() []string { return slices.Concat(hot, rest) }

// Omitted returns the calls of Docker's default allow-list that this
// policy leaves out on purpose; like any unlisted call they fail with
// ENOSYS.
func Omitted() []string { return slices.Clone(omitted) }

// Denied returns the calls that fail with EPERM whatever their arguments.
func Denied() []string { return slices.Clone(denied) }
