package sandbox

import (
	"net/netip"
	"strings"
	"testing"
)

func TestForbiddenAddr(t *testing.T) {
	tests := []struct {
		addr string
		want string // a word of the reason; "" for allowed
	}{
		{"127.0.0.1", "loopback"},
		{"127.5.6.7", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fd00::1", "private"},
		{"169.254.169.254", "metadata"},
		{"::ffff:169.254.169.254", "metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"255.255.255.255", "broadcast"},
		{"100.64.0.1", "CGNAT"},
		{"64:ff9b::a00:1", "NAT64"},
		{"2002:a00:1::", "6to4"},
		// Reachable: the documentation ranges the tests use, and public
		// addresses.
		{"198.51.100.7", ""},
		{"203.0.113.1", ""},
		{"192.0.2.1", ""},
		{"2001:db8::1", ""},
		{"172.32.0.1", ""},
		{"8.8.8.8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got := ForbiddenAddr(netip.MustParseAddr(tt.addr))
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("ForbiddenAddr(%s) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
}
