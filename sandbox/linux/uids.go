package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
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
// gone: a uid is never shared by two live sandboxes.
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

// uidLockPath is the file whose bytes stand for uids (byte n for uid n):
// a Runtime holds an open-file-description lock on a uid's byte while one
// of its sandboxes has that uid. Every Crucible process and Runtime on
// the host thus shares one view of the uids in use, with no daemon; the
// kernel drops a dead process's locks by itself. /run is a tmpfs, emptied
// at boot, and the file never holds data.
const uidLockPath = "/run/crucible/uids.lock"

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

// uidAllocator hands out the uids of a range, one per live sandbox. It is
// safe for concurrent use.
type uidAllocator struct {
	base, count int
	lockFile    *os.File // kept open: closing it would drop every lock; byte uid is locked while uid is held (see uidLockPath)

	mu   sync.Mutex
	next int // offset of the next uid to try
	held map[int]struct{}
}

// newUIDAllocator prepares the range [base, base+count), coordinated with
// every other allocator on the host through the lock file at lockPath; the
// caller has checked the range (CheckUIDRange, as New does).
func newUIDAllocator(base, count int, lockPath string) (*uidAllocator, error) {
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		return nil, fmt.Errorf("sandbox uid locks: %w", err)
	}
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox uid locks: %w", err)
	}
	return &uidAllocator{base: base, count: count, lockFile: f, held: map[int]struct{}{}}, nil
}

// take returns a uid no live sandbox has, and holds it until give. Uids
// are tried in turn around the range, so a uid given back is the last to
// be taken again: what the kernel frees lazily once a sandbox is gone (an
// IPC namespace's message queues) is long freed by then.
func (a *uidAllocator) take() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := 0; i < a.count; i++ {
		off := (a.next + i) % a.count
		uid := a.base + off
		if _, ok := a.held[uid]; ok {
			continue
		}
		err := a.setLock(uid, unix.F_WRLCK)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			continue // another Runtime's sandbox has it
		}
		if err != nil {
			return 0, fmt.Errorf("lock sandbox uid %d: %w", uid, err)
		}
		a.held[uid] = struct{}{}
		a.next = (off + 1) % a.count
		return uid, nil
	}
	return 0, fmt.Errorf("all %d sandbox uids [%d, %d) are in use: the uid count (linux.Options.UIDCount, "+
		"uid_count in crucible serve's --config) bounds the sandboxes alive at once (prestarted, warm, "+
		"sessions and runs, of every Crucible process sharing the range); raise it", a.count, a.base, a.base+a.count)
}

// give returns uid, taken by take, to the range. The caller must be sure
// no process has it any more.
func (a *uidAllocator) give(uid int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.held[uid]; !ok {
		return
	}
	delete(a.held, uid)
	// Unlocking a byte this description holds cannot fail but on a closed
	// file; the uid then stays locked until the process ends, never shared.
	_ = a.setLock(uid, unix.F_UNLCK)
}

// setLock locks or unlocks uid's byte of the lock file, without waiting.
func (a *uidAllocator) setLock(uid int, typ int16) error {
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: int64(uid), Len: 1}
	return unix.FcntlFlock(a.lockFile.Fd(), unix.F_OFD_SETLK, &lk)
}
