//go:build linux

package syscallpolicy

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestLinuxABI: the policy's own Linux constants (linuxabi.go) are Linux's,
// as package unix has them on Linux.
func TestLinuxABI(t *testing.T) {
	for _, tc := range []struct {
		name      string
		own, unix int
	}{
		{"CLONE_NEWNS", cloneNewNS, unix.CLONE_NEWNS},
		{"CLONE_NEWCGROUP", cloneNewCgroup, unix.CLONE_NEWCGROUP},
		{"CLONE_NEWUTS", cloneNewUTS, unix.CLONE_NEWUTS},
		{"CLONE_NEWIPC", cloneNewIPC, unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", cloneNewUser, unix.CLONE_NEWUSER},
		{"CLONE_NEWPID", cloneNewPID, unix.CLONE_NEWPID},
		{"CLONE_NEWNET", cloneNewNet, unix.CLONE_NEWNET},
		{"AF_UNIX", afUnix, unix.AF_UNIX},
		{"AF_INET", afInet, unix.AF_INET},
		{"AF_INET6", afInet6, unix.AF_INET6},
		{"AF_NETLINK", afNetlink, unix.AF_NETLINK},
		{"NETLINK_ROUTE", netlinkRoute, unix.NETLINK_ROUTE},
		{"EPERM", EPERM, int(unix.EPERM)},
		{"ENOSYS", ENOSYS, int(unix.ENOSYS)},
		{"EPROTONOSUPPORT", EPROTONOSUPPORT, int(unix.EPROTONOSUPPORT)},
		{"EAFNOSUPPORT", EAFNOSUPPORT, int(unix.EAFNOSUPPORT)},
	} {
		if tc.own != tc.unix {
			t.Errorf("%s = %#x, Linux's is %#x", tc.name, tc.own, tc.unix)
		}
	}
}
