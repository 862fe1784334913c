package egresstest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Probe is what a runtime's egress test runs: a hostile Python program
// with an allowlist, the upstream host it may reach (web.test, by name and
// by address, HTTP and HTTPS, on a test host of its own), a name it may
// not (other.test, the same address), and a server of the host's on every
// address that no program may reach, directly or through the proxy.
type Probe struct {
	// DNS resolves web.test and other.test; a runtime's proxy must ask it
	// (egress.Config{Resolver: p.DNS.Resolver()}).
	DNS *DNS
	// Web is the upstream host.
	Web *Host

	hostPort int
	hostHits atomic.Int64
}

// NewProbe starts the probe's servers on a test host in subnet (a /30 of
// a documentation range no other test of the package uses); all are
// stopped when the test ends.
func NewProbe(t testing.TB, subnet string) *Probe {
	t.Helper()
	p := &Probe{DNS: NewDNS(t), Web: NewHost(t, subnet)}
	p.DNS.Set("web.test", p.Web.Addr.String())
	p.DNS.Set("other.test", p.Web.Addr.String())
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from web") })
	plain := &httptest.Server{Listener: p.Web.Listen(t, 80), Config: &http.Server{Handler: handler}}
	plain.Start()
	t.Cleanup(plain.Close)
	secure := &httptest.Server{Listener: p.Web.Listen(t, 443), Config: &http.Server{Handler: handler}}
	secure.StartTLS()
	t.Cleanup(secure.Close)
	host, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			p.hostHits.Add(1)
			c.Close()
		}
	}()
	p.hostPort = host.Addr().(*net.TCPAddr).Port
	return p
}

// Request is the probe's run: the program and its allowlist, which
// names web.test, the upstream's address, and a prefix, 0.0.0.0/1, that
// holds the host's loopback with the host server's port (an entry
// naming the loopback alone is refused when given; one that covers it
// must still not reach it).
func (p *Probe) Request() sandbox.Request {
	code := strings.NewReplacer("{{WEB}}", p.Web.Addr.String(), "{{HOSTSIDE}}", p.Web.HostSide.String(),
		"{{HOSTPORT}}", strconv.Itoa(p.hostPort)).Replace(probeProgram)
	return sandbox.Request{Language: sandbox.Python, Code: code, Limits: sandbox.Limits{WallTimeMS: 60_000},
		Network: sandbox.Network{Allow: []string{"web.test", p.Web.Addr.String(), "0.0.0.0/1:" + strconv.Itoa(p.hostPort)}}}
}

// probeProgram tries the allowed host through the proxy (HTTP by name
// and by address, HTTPS by CONNECT), a host not listed, the host's
// loopback through the proxy, and, as a hostile program would, the
// upstream host and the host's ports directly, without the proxy, a raw
// socket and UDP; it prints what each gave, its interfaces and its
// network namespace.
const probeProgram = `import errno, json, os, socket, ssl, urllib.request, urllib.error
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10, context=ssl._create_unverified_context()) as r:
            return "%d %s" % (r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        return "%d %s" % (e.code, e.read().decode().strip())
    except Exception as e:
        return "error %s: %s" % (type(e).__name__, e)
def connect(host, port):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect((host, port))
        return "connected"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()
def raw():
    try:
        socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
        return "opened"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
def udp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b"x", (host, port))
        return "sent"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()
proxy_port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
out = {
    "by_name": fetch("http://web.test/"),
    "by_address": fetch("http://{{WEB}}/"),
    "https": fetch("https://web.test/"),
    "other": fetch("http://other.test/"),
    "host_loopback_via_proxy": fetch("http://127.0.0.1:{{HOSTPORT}}/"),
    "direct_upstream": connect("{{WEB}}", 80),
    "direct_host_side": connect("{{HOSTSIDE}}", {{HOSTPORT}}),
    "own_loopback_other_port": connect("127.0.0.1", {{HOSTPORT}}),
    "proxy_port": connect("127.0.0.1", proxy_port),
    "raw_socket": raw(),
    "udp_upstream": udp("{{WEB}}", 53),
    "interfaces": sorted(name for _, name in socket.if_nameindex()),
    "no_proxy": os.environ.get("NO_PROXY", "unset"),
    "netns": os.readlink("/proc/self/ns/net"),
}
print(json.dumps(out))
`

// Check checks the probe's result: the program reached the allowed host
// through the proxy and nothing else, the host's server was never
// reached, and the run's network log holds each connection with its
// bytes and verdict. It returns the run's network namespace, as the
// program read it ("net:[inode]"), for NetnsHolders.
func (p *Probe) Check(t testing.TB, res sandbox.Result) string {
	t.Helper()
	if res.Status != sandbox.StatusOK {
		t.Fatalf("status %s: %s; stdout %q; stderr %q", res.Status, res.Reason, res.Stdout, res.Stderr)
	}
	var got map[string]any
	if err := json.Unmarshal(res.Stdout, &got); err != nil {
		t.Fatalf("output %q: %v", res.Stdout, err)
	}
	want := map[string]string{
		"by_name":                 "200 hello from web",
		"by_address":              "200 hello from web",
		"https":                   "200 hello from web",
		"other":                   "403 crucible egress proxy: other.test port 80 is not in the allowlist",
		"host_loopback_via_proxy": "403 crucible egress proxy: 127.0.0.1 is a loopback address: never reachable",
		"direct_upstream":         "ENETUNREACH",
		"direct_host_side":        "ENETUNREACH",
		"own_loopback_other_port": "ECONNREFUSED",
		"proxy_port":              "connected",
		"raw_socket":              "EPERM",
		"udp_upstream":            "ENETUNREACH",
		"interfaces":              "[lo]",
		"no_proxy":                "",
	}
	for k, v := range want {
		if s := fmt.Sprint(got[k]); s != v {
			t.Errorf("%s: got %q, want %q", k, s, v)
		}
	}
	if n := p.hostHits.Load(); n != 0 {
		t.Errorf("the host's server was reached %d times", n)
	}
	p.checkLog(t, res.Network)
	netns, _ := got["netns"].(string)
	if !strings.HasPrefix(netns, "net:[") {
		t.Errorf("the program printed no network namespace: %q", netns)
	}
	return netns
}

// checkLog checks the connections the program made, in order.
func (p *Probe) checkLog(t testing.TB, log *sandbox.NetworkLog) {
	t.Helper()
	if log == nil {
		t.Fatal("the result has no network log")
	}
	web := p.Web.Addr.String()
	want := []struct{ host, verdict, ip string }{
		{"web.test", "allowed", web},
		{web, "allowed", web},
		{"web.test", "allowed", web},
		{"other.test", "refused", ""},
		{"127.0.0.1", "refused", "127.0.0.1"},
		{"", "refused", ""}, // the program's bare connect, which sends no request
	}
	if len(log.Connections) != len(want) {
		t.Fatalf("log has %d connections, want %d: %+v", len(log.Connections), len(want), log.Connections)
	}
	var sent, received int64
	for i, w := range want {
		c := log.Connections[i]
		if c.Host != w.host || c.Verdict != w.verdict || c.IP != w.ip || c.Time.IsZero() {
			t.Errorf("connection %d: %+v, want host %q, verdict %s, ip %q", i, c, w.host, w.verdict, w.ip)
		}
		if w.verdict == "allowed" && (c.BytesSent == 0 || c.BytesReceived == 0) {
			t.Errorf("connection %d: %+v: no bytes counted", i, c)
		}
		sent, received = sent+c.BytesSent, received+c.BytesReceived
	}
	if log.BytesSent != sent || log.BytesReceived != received {
		t.Errorf("log totals %d/%d, connections add up to %d/%d", log.BytesSent, log.BytesReceived, sent, received)
	}
}

// NetnsHolders returns what on the host still holds network namespace
// id ("net:[inode]", as /proc/PID/ns/net reads): every process or thread
// in it, and every descriptor of this test process that names it (a
// namespace file the proxy kept open). A socket opened in it (the
// proxy's listener) holds it too; OpenFDs counts those.
func NetnsHolders(t testing.TB, id string) []string {
	t.Helper()
	var held []string
	tasks, err := filepath.Glob("/proc/[0-9]*/task/[0-9]*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tasks {
		if l, err := os.Readlink(p); err == nil && l == id {
			held = append(held, p)
		}
	}
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fds {
		if l, err := os.Readlink(p); err == nil && l == id {
			held = append(held, p)
		}
	}
	return held
}

// OpenFDs lists this process's open descriptors: each one's number and
// what it refers to (a file's path, "socket:[inode]", "pipe:[inode]").
func OpenFDs(t testing.TB) map[string]string {
	t.Helper()
	names, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	open := make(map[string]string, len(names))
	for _, p := range names {
		if l, err := os.Readlink(p); err == nil {
			open[filepath.Base(p)] = l
		}
	}
	return open
}

// NewFDs lists the descriptors open now that were not open in before
// (OpenFDs): a descriptor counts as new when its number was free or now
// refers to something else. A descriptor some other part of the test
// process closed meanwhile is not a leak and is not counted.
func NewFDs(t testing.TB, before map[string]string) []string {
	t.Helper()
	var added []string
	for fd, target := range OpenFDs(t) {
		if before[fd] != target {
			added = append(added, fd+" -> "+target)
		}
	}
	sort.Strings(added)
	return added
}

// HostLinks lists the interfaces of the host's network namespace, but
// the test hosts' (LinkPrefix), which the egress tests of any package
// running beside this one add and remove at any moment.
func HostLinks(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) > 1 && !strings.HasPrefix(f[1], LinkPrefix) {
			names = append(names, f[1])
		}
	}
	return strings.Join(names, " ")
}
