package linux_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy/egress"
	"github.com/crucible-sandbox/crucible/policy/egress/egresstest"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// egressProgram is what a sandboxed program tries with an allowlist: the
// allowed host through the proxy (HTTP by name and by address, HTTPS by
// CONNECT), a host not listed, the host's loopback through the proxy, and,
// as a hostile program would, the upstream host and the host's ports
// directly, without the proxy.
const egressProgram = `import errno, json, os, socket, ssl, urllib.request, urllib.error
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

// TestEgressAllowlist: a run with an allowlist reaches the allowed host
// through the host's proxy and nothing else, whether it is served cold or
// warm; every connection is in the run's record with its bytes and
// verdict; and nothing of the proxy is left once the run has ended.
func TestEgressAllowlist(t *testing.T) {
	testenv.Root(t)
	dns := egresstest.NewDNS(t)
	web := egresstest.NewHost(t, "203.0.113.0/30")
	dns.Set("web.test", web.Addr.String())
	dns.Set("other.test", web.Addr.String())
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from web") })
	plain := &httptest.Server{Listener: web.Listen(t, 80), Config: &http.Server{Handler: handler}}
	plain.Start()
	t.Cleanup(plain.Close)
	secure := &httptest.Server{Listener: web.Listen(t, 443), Config: &http.Server{Handler: handler}}
	secure.StartTLS()
	t.Cleanup(secure.Close)
	// A server of the host's on every address: no program may reach it.
	var hostHits atomic.Int64
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
			hostHits.Add(1)
			c.Close()
		}
	}()
	hostPort := host.Addr().(*net.TCPAddr).Port
	code := strings.NewReplacer("{{WEB}}", web.Addr.String(), "{{HOSTSIDE}}", web.HostSide.String(),
		"{{HOSTPORT}}", strconv.Itoa(hostPort)).Replace(egressProgram)
	req := sandbox.Request{Language: sandbox.Python, Code: code, Limits: sandbox.Limits{WallTimeMS: 60_000},
		// 0.0.0.0/1 holds the host's loopback: an entry naming it alone
		// is refused when given, one that covers it must still not reach it.
		Network: sandbox.Network{Allow: []string{"web.test", web.Addr.String(), "0.0.0.0/1:" + strconv.Itoa(hostPort)}}}

	// A zygote slot serves no run with network (its namespace has no
	// listener): that run takes the cold path; a single-run warm sandbox
	// gets the listener when it is taken.
	for _, tc := range []struct {
		name       string
		warm       int
		singleRun  bool
		servedWarm bool
	}{{"cold", 0, false, false}, {"warm", 1, true, true}, {"zygote slots", 1, false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, linux.Options{Warm: tc.warm, SingleRunWarm: tc.singleRun, Egress: egress.Config{Resolver: dns.Resolver()}})
			if tc.warm > 0 {
				awaitWarm(t, rt)
			}
			linksBefore := hostLinks(t)
			fdsBefore := openFDs(t)
			res := runProgram(t, rt, req)
			if res.Status != sandbox.StatusOK {
				t.Fatalf("status %s: %s", res.Status, describe(res))
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
			if st := rt.WarmStats(); tc.warm > 0 && (st.Hits == 1) != tc.servedWarm {
				t.Errorf("warm pool %+v: served warm %v, want %v", st, st.Hits == 1, tc.servedWarm)
			}
			if hostHits.Load() != 0 {
				t.Errorf("the host's server was reached %d times", hostHits.Load())
			}
			checkEgressLog(t, res.Network, web.Addr.String())
			// Nothing is left: the run's network namespace (the
			// sandbox's, whose id the program printed) is held by no
			// process, thread or descriptor on the host; no interface
			// appeared on the host (the test hosts' aside: other
			// packages' tests add and remove theirs at the same time);
			// and the proxy's listener and connections are closed (the
			// test process holds no more descriptors than before; a warm
			// runtime refills its pool in the background, so only a
			// cold one can be counted).
			netns, _ := got["netns"].(string)
			if !strings.HasPrefix(netns, "net:[") {
				t.Errorf("the program printed no network namespace: %q", netns)
			} else if held := netnsHolders(t, netns); len(held) > 0 {
				t.Errorf("the run's network namespace %s is still held by %v", netns, held)
			}
			if got := hostLinks(t); got != linksBefore {
				t.Errorf("interfaces %q after the run, %q before", got, linksBefore)
			}
			if tc.warm == 0 {
				if got := openFDs(t); got != fdsBefore {
					t.Errorf("%d descriptors open after the run, %d before: the proxy left some", got, fdsBefore)
				}
			}
		})
	}
}

// checkEgressLog checks the connections the program above made, in order.
func checkEgressLog(t *testing.T, log *sandbox.NetworkLog, web string) {
	t.Helper()
	if log == nil {
		t.Fatal("the result has no network log")
	}
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

// TestEgressNone: a run without an allowlist gets no proxy, no proxy
// variables and no log, as before.
func TestEgressNone(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python,
		Code: `import os, socket; print(sorted(k for k in os.environ if "proxy" in k.lower()), [n for _, n in socket.if_nameindex()])`})
	if got := strings.TrimSpace(string(res.Stdout)); got != "[] ['lo']" || res.Network != nil {
		t.Errorf("got %q and log %+v; want no proxy variable, only lo, no log", got, res.Network)
	}
}

func openFDs(t *testing.T) int {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return len(names)
}
