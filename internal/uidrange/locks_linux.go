package uidrange

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// hostLocks are the byte locks of HostLockPath (see there).
type hostLocks struct {
	f *os.File // kept open: closing it drops every lock
}

func openHostLocks(path string) (hostLocks, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return hostLocks{}, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return hostLocks{}, err
	}
	return hostLocks{f: f}, nil
}

// lock takes uid's byte without waiting: false when another open file
// description (another allocator, here or in another process) holds it.
func (l hostLocks) lock(uid int) (bool, error) {
	err := l.set(uid, unix.F_WRLCK)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return false, nil
	}
	return err == nil, err
}

// unlock gives uid's byte back. Unlocking a byte this description holds
// cannot fail but on a closed file; the uid then stays locked until the
// process ends, never shared.
func (l hostLocks) unlock(uid int) { _ = l.set(uid, unix.F_UNLCK) }

func (l hostLocks) set(uid int, typ int16) error {
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: int64(uid), Len: 1}
	return unix.FcntlFlock(l.f.Fd(), unix.F_OFD_SETLK, &lk)
}

func (l hostLocks) close() error { return l.f.Close() }
