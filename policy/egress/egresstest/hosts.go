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
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy/egress"
)

var seq atomic.Int64

// LinkPrefix begins the name of the host's end of every test host's veth
// pair ("crv", the process id, a letter): a test that compares the
// host's interfaces leaves these out, which the tests of any package
// running beside it add and remove at any moment.
const LinkPrefix = "crv"

// Host is an upstream host in a network namespace of its own, reached
// from the host's namespace through a veth pair.
type Host struct {
	// Addr is the host's address in its namespace.
	Addr netip.Addr
	// HostSide is the address of the veth end in the host's namespace.
	HostSide netip.Addr
	// Netns is the namespace's path, /proc/PID/ns/net of the process
	// holding it.
	Netns string
	// Link is the name of the veth end in the host's namespace.
	Link string
}

// NewHost creates a namespace holding one end of a veth pair whose other
// end stays in the host's namespace; subnet is a /30 of a documentation
// range (such as 198.51.100.4/30): the host's side takes its first
// address, the namespace its second. The namespace is held by a process
// of its own (unshare -n sleep), not named with `ip netns add`: a named
// namespace is a mount in the host's mount namespace, which the sandbox
// conformance suite's host check, running beside in another package,
// would see appear. The process and the veth pair are removed when the
// test ends.
func NewHost(t testing.TB, subnet string) *Host {
	t.Helper()
	// Without these, the test would fail at the first command, saying
	// neither what it needs nor how to get it.
	testenv.Root(t)
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.Missing(t, "the ip command (iproute2), to make the test's network namespaces",
			"run scripts/setup.sh, which installs iproute2")
	}
	pfx := netip.MustParsePrefix(subnet)
	if pfx.Bits() != 30 || !pfx.Addr().Is4() {
		t.Fatalf("egresstest.NewHost: subnet must be an IPv4 /30, got %s", subnet)
	}
	n := seq.Add(1)
	link := fmt.Sprintf("%s%d%c", LinkPrefix, os.Getpid()%100000, 'a'+rune(n%26))
	holder := exec.Command("unshare", "--net", "sleep", "infinity")
	holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := holder.Start(); err != nil {
		t.Fatalf("unshare --net: %v", err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	pid := fmt.Sprint(holder.Process.Pid)
	h := &Host{HostSide: pfx.Addr().Next(), Addr: pfx.Addr().Next().Next(), Netns: "/proc/" + pid + "/ns/net", Link: link}
	// unshare execs sleep only once the namespace exists: wait for it.
	for self := nsOf(t, "/proc/self/ns/net"); nsOf(t, h.Netns) == self; time.Sleep(time.Millisecond) {
	}
	ip(t, "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", pid)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", link).Run() })
	ip(t, "addr", "add", h.HostSide.String()+"/30", "dev", link)
	ip(t, "link", "set", link, "up")
	inNetns(t, pid, "addr", "add", h.Addr.String()+"/30", "dev", "eth0")
	inNetns(t, pid, "link", "set", "eth0", "up")
	inNetns(t, pid, "link", "set", "lo", "up")
	return h
}

// nsOf returns the namespace a /proc/.../ns/ link names.
func nsOf(t testing.TB, path string) string {
	t.Helper()
	s, err := os.Readlink(path)
	if err != nil {
		t.Fatalf("namespace %s: %v", path, err)
	}
	return s
}

// inNetns runs ip with args in the network namespace of process pid.
func inNetns(t testing.TB, pid string, args ...string) {
	t.Helper()
	if out, err := exec.Command("nsenter", append([]string{"-t", pid, "-n", "ip"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s in the namespace of %s: %v: %s", strings.Join(args, " "), pid, err, out)
	}
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
