package uidrange

import (
	"fmt"
	"sync"
)

// HostLockPath is the file whose bytes stand for uids (byte n for uid n):
// an Allocator holds an open-file-description lock on a uid's byte while
// one of its sandboxes has that uid, so every Crucible process and runtime
// on the host shares one view of the uids in use, with no daemon; the
// kernel drops a dead process's locks by itself. /run is a tmpfs, emptied
// at boot, and the file never holds data.
const HostLockPath = "/run/crucible/uids.lock"

// Allocator hands out the uids of a range, one per live sandbox. It is
// safe for concurrent use.
type Allocator struct {
	base, count int
	raise       string // what bounds the range, for the exhaustion error
	locks       hostLocks

	mu   sync.Mutex
	next int // offset of the next uid to try
	held map[int]struct{}
}

// New prepares the range [base, base+count), coordinated with every other
// Allocator on the host through the lock file at lockPath (HostLockPath
// but in tests). raise names the setting that sizes the range, such as
// "linux.Options.UIDCount", for the error of a range in full use. The
// caller has checked the range.
func New(base, count int, lockPath, raise string) (*Allocator, error) {
	if count < 1 {
		return nil, fmt.Errorf("uid count must be at least 1, got %d", count)
	}
	locks, err := openHostLocks(lockPath)
	if err != nil {
		return nil, fmt.Errorf("sandbox uid locks: %w", err)
	}
	return &Allocator{base: base, count: count, raise: raise, locks: locks, held: map[int]struct{}{}}, nil
}

// Take returns a uid no live sandbox has, and holds it until Give. Uids
// are tried in turn around the range, so a uid given back is the last to
// be taken again: what the kernel frees lazily once a sandbox is gone (an
// IPC namespace's message queues) is long freed by then.
func (a *Allocator) Take() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.count {
		off := (a.next + i) % a.count
		uid := a.base + off
		if _, ok := a.held[uid]; ok {
			continue
		}
		taken, err := a.locks.lock(uid)
		if err != nil {
			return 0, fmt.Errorf("lock sandbox uid %d: %w", uid, err)
		}
		if !taken {
			continue // another allocator's sandbox has it
		}
		a.held[uid] = struct{}{}
		a.next = (off + 1) % a.count
		return uid, nil
	}
	return 0, fmt.Errorf("all %d sandbox uids [%d, %d) are in use: the uid count (%s) bounds the sandboxes "+
		"alive at once (prestarted, warm, sessions and runs, of every Crucible process sharing the range); raise it",
		a.count, a.base, a.base+a.count, a.raise)
}

// Give returns uid, taken by Take, to the range. The caller must be sure
// no process has it any more. Giving a uid not held does nothing.
func (a *Allocator) Give(uid int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.held[uid]; !ok {
		return
	}
	delete(a.held, uid)
	a.locks.unlock(uid)
}

// Close drops every lock, giving back every uid still held: only for an
// Allocator none of whose sandboxes lives any more.
func (a *Allocator) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.held = map[int]struct{}{}
	return a.locks.close()
}
