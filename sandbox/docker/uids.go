package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/crucible-sandbox/crucible/internal/uidrange"
)

// DefaultUIDBase and DefaultUIDCount are the host uids a Runtime's
// containers run as unless Options say otherwise: a range of its own,
// above the native runtime's (sandbox/linux.DefaultUIDBase, 65536 uids),
// that no other user of the host holds. Each live container has a uid of
// its own, so that the kernel's per-user limits (RLIMIT_NPROC, inotify
// instances, ...) are per sandbox and no sandbox can signal another's
// processes. The docker and gvisor Runtimes of one process, and of every
// Crucible process on the host, share the range through package uidrange's
// lock file: a uid is never held by two live containers.
const (
	DefaultUIDBase  = 2_100_000_000
	DefaultUIDCount = 65536
)

// newUIDs returns the allocator of the range [base, base+count).
func newUIDs(base, count int) (*uidrange.Allocator, error) {
	if base <= 0 || count <= 0 || base+count > 1<<31-2 {
		return nil, fmt.Errorf("docker.Options: UIDBase and UIDCount must be positive and end below 2^31-2, got %d and %d", base, count)
	}
	a, err := uidrange.New(base, count, uidrange.HostLockPath, "docker.Options.UIDCount")
	if errors.Is(err, fs.ErrPermission) {
		// A user of the daemon who is not root (a member of the docker
		// group) cannot write /run: its runtimes share a lock file of the
		// user's own. Root's runtimes and another user's use other files,
		// so their containers may share a uid with this user's; on a host
		// where that matters, the operator gives each its own UIDBase.
		a, err = uidrange.New(base, count, filepath.Join(os.TempDir(), fmt.Sprintf("crucible-uids-%d.lock", os.Getuid())), "docker.Options.UIDCount")
	}
	return a, err
}
