package linux

import (
	"fmt"
)

// The host uids sandboxes run as.
//
// Security: the kernel keeps several quotas per user, not per process or
// cgroup: inotify instances and watches (fs.inotify.max_user_*), pending
// signals (RLIMIT_SIGPENDING, which posix timers draw on too), POSIX
// message-queue bytes (RLIMIT_MSGQUEUE), pipe pages
// (fs.pipe-user-pages-*), epoll watches, processes (RLIMIT_NPROC). Had
// every sandbox the same uid, one tenant's program could take a quota
// whole and make another's inotify_init, timer_create, mq_open or pipe
// sizing fail, and the shared counts (SigQ in /proc/self/status) would be a
// channel between tenants. So each live sandbox has a uid (and a gid of
// the same number) of its own, from a range reserved for sandboxes, and a
// uid goes back to the range only when every process of its sandbox is
// gone: a uid is never shared by two live sandboxes. Package uidrange
// hands them out, shared by every runtime and Crucible process on the host.
const (
	// DefaultUIDBase is the first uid of the default range. It lies above
	// the host's own users (below 60000), systemd's dynamic users
	// (61184-65519), nobody (65534), the subordinate uids Debian's useradd
	// hands out (100000 up to 600100000) and systemd-nspawn's container
	// range (524288-1879048191), and below 2^31, which some tools read as
	// a negative number.
	DefaultUIDBase = 2_000_000_000
	// DefaultUIDCount is the size of the default range: the most
	// sandboxes (prestarted, warm, in sessions and in runs) alive at once
	// on the host, across every Crucible process that shares the range.
	DefaultUIDCount = 65536
	// minUIDBase keeps sandbox uids above the 16-bit ids of the host's own
	// users and services, which own files a sandbox must not.
	minUIDBase = 65536
	// maxUID is the largest usable uid: (uid_t)-1 means "no change" to
	// the kernel.
	maxUID = 1<<32 - 2
)

// CheckUIDRange checks a range of count uids from base for sandboxes:
// within [65536, 4294967294] and not empty. The error names the rule.
func CheckUIDRange(base, count int) error {
	switch {
	case base < minUIDBase:
		return fmt.Errorf("uid base must be at least %d (above the host's own users and services), got %d", minUIDBase, base)
	case count < 1:
		return fmt.Errorf("uid count must be at least 1, got %d", count)
	case base > maxUID || count > maxUID-base+1:
		return fmt.Errorf("uid range [%d, %d) must end by %d", base, base+count, maxUID+1)
	}
	return nil
}
