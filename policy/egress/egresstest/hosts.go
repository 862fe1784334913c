// Package egresstest gives tests of the egress proxy an "internet" that
// stays on this machine: upstream hosts in network namespaces the test
// creates, with documentation-range addresses on veth pairs from the
// host's namespace, and a DNS server of the test's own. Everything it
// makes is removed in t.Cleanup. It needs root and the ip command.
package egresstest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crucible-sandbox/crucible/policy/egress"
)

var seq atomic.Int64

// Host is an upstream host in a network namespace of its own, reached
// from the host's namespace through a veth pair.
type Host struct {
	// Addr is the host's address in its namespace.
	Addr netip.Addr
	// HostSide is the address of the veth end in the host's namespace.
	HostSide netip.Addr
	// Netns is the namespace's path, such as /run/netns/NAME.
	Netns string
	// Link is the name of the veth end in the host's namespace.
	Link string
}

// NewHost creates a namespace holding one end of a veth pair whose other
// end stays in the host's namespace; subnet is a /30 of a documentation
// range (such as 198.51.100.4/30): the host's side takes its first
// address, the namespace its second. The namespace and the veth pair are
// removed when the test ends.
func NewHost(t testing.TB, subnet string) *Host {
	t.Helper()
	pfx := netip.MustParsePrefix(subnet)
	if pfx.Bits() != 30 || !pfx.Addr().Is4() {
		t.Fatalf("egresstest.NewHost: subnet must be an IPv4 /30, got %s", subnet)
	}
	n := seq.Add(1)
	name := fmt.Sprintf("crt%d-%d", os.Getpid(), n)
	link := fmt.Sprintf("crv%d%c", os.Getpid()%100000, 'a'+rune(n%26))
	h := &Host{HostSide: pfx.Addr().Next(), Addr: pfx.Addr().Next().Next(), Netns: "/run/netns/" + name, Link: link}
	ip(t, "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ip(t, "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", name)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", link).Run() })
	ip(t, "addr", "add", h.HostSide.String()+"/30", "dev", link)
	ip(t, "link", "set", link, "up")
	ip(t, "-n", name, "addr", "add", h.Addr.String()+"/30", "dev", "eth0")
	ip(t, "-n", name, "link", "set", "eth0", "up")
	ip(t, "-n", name, "link", "set", "lo", "up")
	return h
}

// Listen opens a TCP listener on the host's address and port, in its
// namespace; it is closed when the test ends.
func (h *Host) Listen(t testing.TB, port int) net.Listener {
	t.Helper()
	ln, err := egress.ListenIn(h.Netns, netip.AddrPortFrom(h.Addr, uint16(port)).String())
	if err != nil {
		t.Fatalf("listen in %s: %v", h.Netns, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
