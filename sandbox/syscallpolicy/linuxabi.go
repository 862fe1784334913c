package syscallpolicy

// Linux's values of the flags and families the policy names. The policy
// is Linux's whatever the GOOS of the program that generates a filter from
// it: the docker runtime builds its seccomp profile on macOS or Windows
// too, for a daemon that runs Linux, and golang.org/x/sys/unix has other
// values there (AF_INET6 is 30 on macOS) or none. linuxabi_test.go checks
// each against package unix on Linux.
const (
	cloneNewNS     = 0x00020000 // unix.CLONE_NEWNS
	cloneNewCgroup = 0x02000000 // unix.CLONE_NEWCGROUP
	cloneNewUTS    = 0x04000000 // unix.CLONE_NEWUTS
	cloneNewIPC    = 0x08000000 // unix.CLONE_NEWIPC
	cloneNewUser   = 0x10000000 // unix.CLONE_NEWUSER
	cloneNewPID    = 0x20000000 // unix.CLONE_NEWPID
	cloneNewNet    = 0x40000000 // unix.CLONE_NEWNET

	afUnix    = 1  // unix.AF_UNIX
	afInet    = 2  // unix.AF_INET
	afInet6   = 10 // unix.AF_INET6
	afNetlink = 16 // unix.AF_NETLINK

	netlinkRoute = 0 // unix.NETLINK_ROUTE
)

// Linux's errno values the policy's refusals return (a seccomp profile
// names them as numbers).
const (
	EPERM           = 1  // unix.EPERM
	ENOSYS          = 38 // unix.ENOSYS
	EPROTONOSUPPORT = 93 // unix.EPROTONOSUPPORT
	EAFNOSUPPORT    = 97 // unix.EAFNOSUPPORT
)
