package docker

import (
	"fmt"
	"sync"
)

// DefaultUIDBase and DefaultUIDCount are the host uids a Runtime's
// containers run as unless Options say otherwise: a range of its own,
// above the native runtime's (sandbox/linux.DefaultUIDBase, 65536 uids),
// that no other user of the host holds. Each live container has a uid of
// its own, so that the kernel's per-user limits (RLIMIT_NPROC, inotify
// instances, ...) are per sandbox and no sandbox can signal another's
// processes.
const (
	DefaultUIDBase  = 2_100_000_000
	DefaultUIDCount = 65536
)

// uidPool hands out the uids of a range, each to one live container.
type uidPool struct {
	mu    sync.Mutex
	base  int
	count int
	next  int
	used  map[int]bool
}

func newUIDPool(base, count int) (*uidPool, error) {
	if base <= 0 || count <= 0 || base+count > 1<<31-2 {
		return nil, fmt.Errorf("docker.Options: UIDBase and UIDCount must be positive and end below 2^31-2, got %d and %d", base, count)
	}
	return &uidPool{base: base, count: count, used: map[int]bool{}}, nil
}

// take returns a uid no live container of this pool holds.
func (p *uidPool) take() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range p.count {
		uid := p.base + p.next
		p.next = (p.next + 1) % p.count
		if !p.used[uid] {
			p.used[uid] = true
			return uid, nil
		}
	}
	return 0, fmt.Errorf("all %d sandbox uids from %d are in use", p.count, p.base)
}

// put returns uid to the pool once its container is removed.
func (p *uidPool) put(uid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, uid)
}
