package syscallpolicy

import (
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// The lists must name real calls, each once, in one list only: a call in
// two lists would get whichever verdict the filter tests first.
func TestListsAreDisjointAndKnown(t *testing.T) {
	lists := map[string][]string{
		"Allowed":         Allowed(),
		"ArgumentChecked": ArgumentChecked(),
		"Denied":          Denied(),
		"Omitted":         Omitted(),
	}
	seen := map[string]string{}
	for list, names := range lists {
		for _, name := range names {
			if prev, ok := seen[name]; ok {
				t.Errorf("%s is in both %s and %s", name, prev, list)
			}
			seen[name] = list
			if _, ok := arch.X86_64.SyscallNames[name]; !ok {
				t.Errorf("%s: %s is no system call on x86-64", list, name)
			}
		}
	}
	for list, names := range lists {
		for i, name := range names {
			if slices.Contains(names[:i], name) {
				t.Errorf("%s lists %s twice", list, name)
			}
		}
	}
	for _, must := range []string{"clone3", "io_uring_setup", "ptrace", "unshare", "bpf", "userfaultfd"} {
		if slices.Contains(Allowed(), must) {
			t.Errorf("%s is allowed", must)
		}
	}
}

func TestSocketAllowed(t *testing.T) {
	for _, tc := range []struct {
		name             string
		family, protocol int
		want             bool
	}{
		{"unix", unix.AF_UNIX, 0, true},
		{"inet tcp", unix.AF_INET, unix.IPPROTO_TCP, true},
		{"inet6 udp", unix.AF_INET6, unix.IPPROTO_UDP, true},
		{"netlink route", unix.AF_NETLINK, unix.NETLINK_ROUTE, true},
		{"netlink audit", unix.AF_NETLINK, unix.NETLINK_AUDIT, false},
		{"netlink uevent", unix.AF_NETLINK, unix.NETLINK_KOBJECT_UEVENT, false},
		{"vsock", unix.AF_VSOCK, 0, false},
		{"packet", unix.AF_PACKET, 0, false},
		{"alg", unix.AF_ALG, 0, false},
		{"key", unix.AF_KEY, 2, false},
		{"xdp", unix.AF_XDP, 0, false},
		{"unspec", unix.AF_UNSPEC, 0, false},
	} {
		if got := SocketAllowed(tc.family, tc.protocol); got != tc.want {
			t.Errorf("%s: SocketAllowed(%d, %d) = %v, want %v", tc.name, tc.family, tc.protocol, got, tc.want)
		}
	}
}
