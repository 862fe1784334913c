package sandboxtest

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"golang.org/x/sys/unix"
)

// Sockets of the address families a sandbox must not reach. The network
// namespace isolates IP, netlink and abstract Unix sockets, but not every
// family: AF_VSOCK's ports are global to the machine and lead to the
// hypervisor, and the others are kernel code no program here needs.

// socketCase is one socket(2) or socketpair(2) the program makes. want is
// "created", an errno name, or "refused" (any errno: the kernel's own
// check, not the family filter, decides).
type socketCase struct {
	name                   string
	pair                   bool
	family, kind, protocol int64
	want                   string
}

// highBits sets bits above the 32 the kernel reads of an int argument: a
// filter comparing only the low half would let such a family through.
const highBits = 1 << 32

var socketCases = []socketCase{
	{"unix stream", false, unix.AF_UNIX, unix.SOCK_STREAM, 0, "created"},
	{"unix dgram", false, unix.AF_UNIX, unix.SOCK_DGRAM, 0, "created"},
	{"inet stream", false, unix.AF_INET, unix.SOCK_STREAM, 0, "created"},
	{"inet dgram", false, unix.AF_INET, unix.SOCK_DGRAM, 0, "created"},
	{"inet6 stream", false, unix.AF_INET6, unix.SOCK_STREAM, 0, "created"},
	{"netlink route", false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE, "created"},
	{"unix socketpair", true, unix.AF_UNIX, unix.SOCK_STREAM, 0, "created"},
	// Raw and packet sockets need CAP_NET_RAW, which the program lacks;
	// (AF_INET, SOCK_PACKET) is turned into AF_PACKET by the kernel.
	{"inet raw", false, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP, "refused"},
	{"inet6 raw", false, unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6, "refused"},
	{"inet packet", false, unix.AF_INET, unix.SOCK_PACKET, 0, "refused"},
	{"netlink sock_diag", false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG, "EPROTONOSUPPORT"},
	{"netlink audit", false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT, "EPROTONOSUPPORT"},
	{"netlink uevent", false, unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT, "EPROTONOSUPPORT"},
	{"netlink generic", false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_GENERIC, "EPROTONOSUPPORT"},
	{"netlink netfilter", false, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_NETFILTER, "EPROTONOSUPPORT"},
	{"vsock stream", false, unix.AF_VSOCK, unix.SOCK_STREAM, 0, "EAFNOSUPPORT"},
	{"vsock dgram", false, unix.AF_VSOCK, unix.SOCK_DGRAM, 0, "EAFNOSUPPORT"},
	{"vsock seqpacket", false, unix.AF_VSOCK, unix.SOCK_SEQPACKET, 0, "EAFNOSUPPORT"},
	{"vsock high bits", false, unix.AF_VSOCK | highBits, unix.SOCK_STREAM, 0, "EAFNOSUPPORT"},
	{"inet high bits", false, unix.AF_INET | highBits, unix.SOCK_STREAM, 0, "EAFNOSUPPORT"},
	{"packet raw", false, unix.AF_PACKET, unix.SOCK_RAW, 0, "EAFNOSUPPORT"},
	{"packet dgram", false, unix.AF_PACKET, unix.SOCK_DGRAM, 0, "EAFNOSUPPORT"},
	{"alg", false, unix.AF_ALG, unix.SOCK_SEQPACKET, 0, "EAFNOSUPPORT"},
	{"key", false, unix.AF_KEY, unix.SOCK_RAW, 2, "EAFNOSUPPORT"},
	{"xdp", false, unix.AF_XDP, unix.SOCK_RAW, 0, "EAFNOSUPPORT"},
	{"tipc", false, unix.AF_TIPC, unix.SOCK_RDM, 0, "EAFNOSUPPORT"},
	{"rds", false, unix.AF_RDS, unix.SOCK_SEQPACKET, 0, "EAFNOSUPPORT"},
	{"bluetooth", false, unix.AF_BLUETOOTH, unix.SOCK_RAW, 0, "EAFNOSUPPORT"},
	{"can", false, unix.AF_CAN, unix.SOCK_RAW, 1, "EAFNOSUPPORT"},
	{"qipcrtr", false, unix.AF_QIPCRTR, unix.SOCK_DGRAM, 0, "EAFNOSUPPORT"},
	{"smc", false, unix.AF_SMC, unix.SOCK_STREAM, 0, "EAFNOSUPPORT"},
	{"mctp", false, unix.AF_MCTP, unix.SOCK_DGRAM, 0, "EAFNOSUPPORT"},
	{"unspec", false, unix.AF_UNSPEC, unix.SOCK_STREAM, 0, "EAFNOSUPPORT"},
	{"inet socketpair", true, unix.AF_INET, unix.SOCK_STREAM, 0, "EAFNOSUPPORT"},
	{"vsock socketpair", true, unix.AF_VSOCK, unix.SOCK_STREAM, 0, "EAFNOSUPPORT"},
	{"tipc socketpair", true, unix.AF_TIPC, unix.SOCK_RDM, 0, "EAFNOSUPPORT"},
	{"netlink socketpair", true, unix.AF_NETLINK, unix.SOCK_RAW, 0, "EAFNOSUPPORT"},
}

// socketProgram makes each socket with the raw system call (so that the
// arguments reach the kernel exactly as given), then tries to listen on a
// vsock port in the machine-wide port space and, if that works, holds it
// for a second so that the host can see it taken.
const socketProgram = `import ctypes, errno, json, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CASES = json.loads('{{CASES}}')
def make(pair, family, kind, protocol):
    fds = (ctypes.c_int * 2)()
    ctypes.set_errno(0)
    if pair:
        ret = libc.syscall(ctypes.c_long({{NR_socketpair}}), ctypes.c_long(family), ctypes.c_long(kind), ctypes.c_long(protocol), fds)
    else:
        ret = libc.syscall(ctypes.c_long({{NR_socket}}), ctypes.c_long(family), ctypes.c_long(kind), ctypes.c_long(protocol))
    if ret == -1:
        e = ctypes.get_errno()
        return errno.errorcode.get(e, str(e))
    for fd in (fds if pair else [ret]):
        os.close(fd)
    return "created"
out = {"cases": {c[0]: make(*c[1:]) for c in CASES}}
try:
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    s.bind((socket.VMADDR_CID_ANY, {{PORT}}))
    s.listen()
    out["vsock_listen"] = "listening"
    time.sleep(1)
    s.close()
except OSError as e:
    out["vsock_listen"] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
`

func testSocketFamilies(t *testing.T, s *suite) {
	port := 20000 + rand.IntN(40000)
	cases := make([][]any, len(socketCases))
	for i, c := range socketCases {
		cases[i] = []any{c.name, c.pair, c.family, c.kind, c.protocol}
	}
	casesJSON, _ := json.Marshal(cases)
	vars := syscallVars(t, "socket", "socketpair")
	vars["CASES"], vars["PORT"] = string(casesJSON), strconv.Itoa(port)
	code := program(socketProgram, vars)

	// From the host: while the program runs, try to take the same vsock
	// port. EADDRINUSE means the sandbox holds a port of the machine.
	var taken atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	hostVsock := vsockPortTaken(port) == nil
	if hostVsock {
		wg.Go(func() {
			for {
				if errors.Is(vsockPortTaken(port), unix.EADDRINUSE) {
					taken.Store(true)
				}
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	} else {
		t.Logf("the host has no AF_VSOCK: only the sandbox's own report is checked")
	}
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code}, watch{token: newToken()})
	close(stop)
	wg.Wait()
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep struct {
		Cases       map[string]string `json:"cases"`
		VsockListen string            `json:"vsock_listen"`
	}
	decodeReport(t, res, &rep)
	for _, c := range socketCases {
		got := rep.Cases[c.name]
		ok := got == c.want || (c.want == "refused" && got != "" && got != "created") || s.familyRefused(c.want, got)
		if !ok {
			t.Errorf("%s (family %#x, type %d, protocol %d): %s, want %s", c.name, c.family, c.kind, c.protocol, got, c.want)
		}
	}
	if s.familyRefusal != "" {
		t.Logf("the runtime refuses socket families with %s: %s", s.familyRefusal, s.familyRefusalWhy)
	}
	if rep.VsockListen != "EAFNOSUPPORT" && !s.familyRefused("EAFNOSUPPORT", rep.VsockListen) {
		t.Errorf("listening on vsock port %d: %s, want EAFNOSUPPORT", port, rep.VsockListen)
	}
	if taken.Load() {
		t.Errorf("host check: the sandbox held vsock port %d of the machine", port)
	}
}

// familyRefused reports whether got is the runtime's own refusal
// (Options.FamilyRefusal) of a family or protocol the policy refuses with
// want.
func (s *suite) familyRefused(want, got string) bool {
	return s.familyRefusal != "" && got == s.familyRefusal && (want == "EAFNOSUPPORT" || want == "EPROTONOSUPPORT")
}

// vsockPortTaken binds an AF_VSOCK socket of the host to port and closes
// it: nil if the port was free, EADDRINUSE if something holds it.
func vsockPortTaken(port int) error {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Bind(fd, &unix.SockaddrVM{CID: unix.VMADDR_CID_ANY, Port: uint32(port)})
}
