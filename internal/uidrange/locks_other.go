//go:build !linux

package uidrange

// hostLocks share nothing outside the process where the containers' kernel
// is not this host's (macOS and Windows run the daemon in a virtual
// machine): uids there are apart from this host's users, and the
// Allocator's own map keeps its sandboxes apart.
type hostLocks struct{}

func openHostLocks(string) (hostLocks, error) { return hostLocks{}, nil }

func (hostLocks) lock(int) (bool, error) { return true, nil }

func (hostLocks) unlock(int) {}

func (hostLocks) close() error { return nil }
