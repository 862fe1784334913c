package egress_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy/egress"
	"github.com/crucible-sandbox/crucible/policy/egress/egresstest"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// world is the tests' "internet", all on this machine: web.test at
// 198.51.100.2 (a host in a network namespace of the test's, on a veth
// pair) serving HTTP on 80, HTTPS on 443 and an echo on 7; a DNS server
// of the test's; and a server on the host's own loopback that no
// connection may ever reach.
type world struct {
	dns      *egresstest.DNS
	web      *egresstest.Host
	loopback string // host:port on 127.0.0.1
	hits     atomic.Int64
}

const bigBody = 10 << 10

func newWorld(t *testing.T) *world {
	testenv.Root(t)
	w := &world{dns: egresstest.NewDNS(t), web: egresstest.NewHost(t, "198.51.100.0/30")}
	w.dns.Set("web.test", w.web.Addr.String())
	w.dns.Set("intra.test", "127.0.0.1")
	w.dns.Set("mixed.test", w.web.Addr.String(), "10.0.0.1")
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) { fmt.Fprintf(rw, "hello from web, host %s", r.Host) })
	mux.HandleFunc("/big", func(rw http.ResponseWriter, r *http.Request) { rw.Write([]byte(strings.Repeat("x", bigBody))) })
	plain := &httptest.Server{Listener: w.web.Listen(t, 80), Config: &http.Server{Handler: mux}}
	plain.Start()
	t.Cleanup(plain.Close)
	secure := &httptest.Server{Listener: w.web.Listen(t, 443), Config: &http.Server{Handler: mux}}
	secure.StartTLS()
	t.Cleanup(secure.Close)
	echo := w.web.Listen(t, 7)
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lo.Close() })
	w.loopback = lo.Addr().String()
	go func() {
		for {
			c, err := lo.Accept()
			if err != nil {
				return
			}
			w.hits.Add(1)
			c.Close()
		}
	}()
	return w
}

// proxy starts a proxy for n on the host's loopback (the runtime puts the
// listener in the sandbox's namespace; here the test is the program).
func (w *world) proxy(t *testing.T, n sandbox.Network) (*egress.Proxy, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return egress.Serve(ln, egress.Config{Resolver: w.dns.Resolver()}, n), ln.Addr().String()
}

// get fetches u through the proxy at addr; serverName, if set, is the TLS
// server name to send instead of u's host.
func get(proxy, u, serverName string) (int, string, error) {
	pu, _ := url.Parse("http://" + proxy)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: serverName}} // the test's own certificate
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestProxy(t *testing.T) {
	w := newWorld(t)
	_, loPort, _ := net.SplitHostPort(w.loopback)
	tests := []struct {
		name     string
		allow    []string
		url      string
		sni      string
		status   int    // 0: the request fails (err)
		body     string // a part of the body
		verdict  string
		ip       string
		reason   string // a part of the logged reason
		nDNSweb  int    // queries for web.test expected
		noDNSfor string // a name that must not have been looked up
	}{
		{name: "http by name", allow: []string{"web.test"}, url: "http://web.test/", status: 200, body: "hello from web, host web.test",
			verdict: "allowed", ip: "198.51.100.2", nDNSweb: 1},
		{name: "http by address", allow: []string{"198.51.100.2"}, url: "http://198.51.100.2/", status: 200, body: "hello from web",
			verdict: "allowed", ip: "198.51.100.2"},
		{name: "http by prefix and port", allow: []string{"198.51.100.0/30:80"}, url: "http://198.51.100.2/", status: 200, body: "hello",
			verdict: "allowed", ip: "198.51.100.2"},
		{name: "https by CONNECT and SNI", allow: []string{"web.test"}, url: "https://web.test/", status: 200, body: "hello from web",
			verdict: "allowed", ip: "198.51.100.2", nDNSweb: 1},
		{name: "https by wildcard", allow: []string{"*.test:443"}, url: "https://web.test/", status: 200, body: "hello", verdict: "allowed", nDNSweb: 1},
		{name: "https to an address", allow: []string{"198.51.100.2:443"}, url: "https://198.51.100.2/", sni: "anything.test", status: 200, body: "hello", verdict: "allowed"},
		{name: "other host refused, not looked up", allow: []string{"web.test"}, url: "http://other.test/", status: 403, body: "not in the allowlist",
			verdict: "refused", reason: "other.test port 80 is not in the allowlist", noDNSfor: "other.test"},
		{name: "other port refused", allow: []string{"web.test"}, url: "http://web.test:8080/", status: 403, verdict: "refused", reason: "port 8080 is not in the allowlist"},
		{name: "other address refused", allow: []string{"web.test"}, url: "http://198.51.100.2/", status: 403, verdict: "refused", reason: "not in the allowlist"},
		{name: "wildcard does not match its apex", allow: []string{"*.web.test"}, url: "http://web.test/", status: 403, verdict: "refused"},
		{name: "loopback listed", allow: []string{"127.0.0.1:" + loPort}, url: "http://" + w.loopback + "/", status: 403, body: "loopback",
			verdict: "refused", ip: "127.0.0.1", reason: "loopback"},
		{name: "private listed", allow: []string{"10.0.0.0/8"}, url: "http://10.1.2.3/", status: 403, verdict: "refused", reason: "private"},
		{name: "metadata listed", allow: []string{"169.254.169.254"}, url: "http://169.254.169.254/latest/meta-data/", status: 403, verdict: "refused", reason: "metadata"},
		{name: "ipv6 loopback listed", allow: []string{"::1"}, url: "http://[::1]/", status: 403, verdict: "refused", reason: "loopback"},
		{name: "mapped loopback listed", allow: []string{"::ffff:127.0.0.1"}, url: "http://[::ffff:127.0.0.1]/", status: 403, verdict: "refused", reason: "loopback"},
		{name: "name resolving to loopback", allow: []string{"intra.test:" + loPort}, url: "http://intra.test:" + loPort + "/", status: 403,
			verdict: "refused", ip: "127.0.0.1", reason: "intra.test resolves to 127.0.0.1"},
		{name: "name resolving to public and private", allow: []string{"mixed.test"}, url: "http://mixed.test/", status: 403,
			verdict: "refused", ip: "10.0.0.1", reason: "private"},
		{name: "unresolvable name", allow: []string{"nowhere.test"}, url: "http://nowhere.test/", status: 502, verdict: "failed", reason: "resolve nowhere.test"},
		{name: "SNI other than the CONNECT host", allow: []string{"web.test"}, url: "https://web.test/", sni: "evil.test",
			verdict: "refused", reason: `TLS server name "evil.test" is not the CONNECT host "web.test"`, nDNSweb: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := w.dns.Queries("web.test")
			hitsBefore := w.hits.Load()
			p, addr := w.proxy(t, sandbox.Network{Allow: tt.allow})
			status, body, err := get(addr, tt.url, tt.sni)
			log := p.Close()
			if tt.status == 0 {
				if err == nil {
					t.Errorf("GET %s = %d %q, want it to fail", tt.url, status, body)
				}
			} else if err != nil || status != tt.status || !strings.Contains(body, tt.body) {
				t.Errorf("GET %s = %d %q, %v; want %d and %q", tt.url, status, body, err, tt.status, tt.body)
			}
			if len(log.Connections) != 1 {
				t.Fatalf("log = %+v, want one connection", log)
			}
			c := log.Connections[0]
			if c.Verdict != tt.verdict || tt.ip != "" && c.IP != tt.ip || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("logged %+v, want verdict %s, ip %q, reason with %q", c, tt.verdict, tt.ip, tt.reason)
			}
			if c.Verdict != "refused" && c.IP != "" && c.IP != w.web.Addr.String() {
				t.Errorf("logged %+v: the proxy dialled %s, an address this test did not set up", c, c.IP)
			}
			if c.Time.IsZero() || c.Port == 0 || c.Host == "" || c.Kind == "" {
				t.Errorf("logged %+v: time, kind, host and port must be set", c)
			}
			if c.Verdict == "allowed" && (c.BytesSent == 0 || c.BytesReceived == 0) {
				t.Errorf("logged %+v: an allowed connection carried bytes both ways", c)
			}
			if log.BytesSent != c.BytesSent || log.BytesReceived != c.BytesReceived {
				t.Errorf("log totals %d/%d, connection %d/%d", log.BytesSent, log.BytesReceived, c.BytesSent, c.BytesReceived)
			}
			if got := w.dns.Queries("web.test") - before; got != tt.nDNSweb {
				t.Errorf("web.test looked up %d times, want %d", got, tt.nDNSweb)
			}
			if tt.noDNSfor != "" && w.dns.Queries(tt.noDNSfor) != 0 {
				t.Errorf("%s was looked up: a name not listed must not leave in a DNS query", tt.noDNSfor)
			}
			if w.hits.Load() != hitsBefore {
				t.Errorf("the host's loopback server was reached")
			}
		})
	}
}

// TestProxyRebinding: a name whose second resolution changes to a
// loopback address cannot reach it; the first connection went to the
// address checked then.
func TestProxyRebinding(t *testing.T) {
	w := newWorld(t)
	w.dns.Set("rebind.test", "198.51.100.2")
	p, addr := w.proxy(t, sandbox.Network{Allow: []string{"rebind.test:7"}})
	defer p.Close()
	echo := func() string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT rebind.test:7 HTTP/1.1\r\nHost: rebind.test:7\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Sprintf("%d %s", resp.StatusCode, b)
		}
		fmt.Fprintf(c, "ping\n")
		line, _ := br.ReadString('\n')
		return line
	}
	if got := echo(); got != "ping\n" {
		t.Fatalf("first connection: %q, want the echo (the log: %+v)", got, p.Close().Connections)
	}
	w.dns.Set("rebind.test", "127.0.0.1")
	if got := echo(); !strings.HasPrefix(got, "403") || !strings.Contains(got, "resolves to 127.0.0.1") {
		t.Errorf("after rebinding: %q, want 403 naming the loopback address", got)
	}
	log := p.Close()
	if len(log.Connections) != 2 || log.Connections[0].Verdict != "allowed" || log.Connections[1].Verdict != "refused" {
		t.Errorf("log = %+v, want allowed then refused", log.Connections)
	} else if ip := log.Connections[0].IP; ip != w.web.Addr.String() {
		t.Errorf("the first connection went to %s, not to the address this test set up (%s)", ip, w.web.Addr)
	}
	if w.hits.Load() != 0 {
		t.Errorf("the host's loopback was reached")
	}
}

// TestProxyCaps: past max_connections a connection is refused; past
// max_bytes it is cut; both are logged.
func TestProxyCaps(t *testing.T) {
	w := newWorld(t)
	t.Run("connections", func(t *testing.T) {
		p, addr := w.proxy(t, sandbox.Network{Allow: []string{"web.test"}, MaxConnections: 2})
		var statuses []int
		for range 2 {
			status, _, err := get(addr, "http://web.test/", "")
			if err != nil {
				t.Fatal(err)
			}
			statuses = append(statuses, status)
		}
		// The third is refused as it is accepted, before any request: an
		// HTTP client may read that answer or, if it arrives before the
		// client wrote its request, drop it as unsolicited. A plain
		// connection reads it every time.
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		refusal, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(refusal), "HTTP/1.1 403 ") || !strings.Contains(string(refusal), "connection cap of 2") {
			t.Errorf("the third connection read %q, want a 403 naming the connection cap", refusal)
		}
		log := p.Close()
		if fmt.Sprint(statuses) != "[200 200]" {
			t.Errorf("statuses %v, want [200 200]", statuses)
		}
		if len(log.Connections) != 3 || log.Connections[2].Verdict != "refused" || !strings.Contains(log.Connections[2].Reason, "connection cap of 2") {
			t.Errorf("log = %+v, want the third refused by the cap", log.Connections)
		}
	})
	t.Run("unlisted", func(t *testing.T) {
		p, addr := w.proxy(t, sandbox.Network{Allow: []string{"web.test"}, MaxConnections: 1})
		if _, _, err := get(addr, "http://web.test/", ""); err != nil {
			t.Fatal(err)
		}
		for range sandbox.MaxUnlisted + 5 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(c) // refused at once
			c.Close()
		}
		log := p.Close()
		if len(log.Connections) != 1+sandbox.MaxUnlisted || log.Unlisted != 5 {
			t.Errorf("%d connections listed, %d unlisted; want %d and 5", len(log.Connections), log.Unlisted, 1+sandbox.MaxUnlisted)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		p, addr := w.proxy(t, sandbox.Network{Allow: []string{"web.test"}, MaxBytes: 1000})
		_, body, _ := get(addr, "http://web.test/big", "")
		log := p.Close()
		if len(body) >= bigBody {
			t.Errorf("got the whole %d-byte body past a 1000-byte cap", len(body))
		}
		c := log.Connections[0]
		if c.BytesSent+c.BytesReceived != 1000 || !strings.Contains(c.Reason, "byte cap of 1000 reached") {
			t.Errorf("logged %+v, want 1000 bytes and the cap as reason", c)
		}
	})
}

// TestProxyRequests: what is not a proxy request is refused; plain TCP
// goes through a CONNECT tunnel to an allowed address and port.
func TestProxyRequests(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name, allow, send, want, reason string
	}{
		{"tcp by CONNECT", "198.51.100.2:7", "CONNECT 198.51.100.2:7 HTTP/1.1\r\nHost: x\r\n\r\nhello\n", "HTTP/1.1 200 Connection established\r\n\r\nhello\n", ""},
		{"https absolute form", "web.test", "GET https://web.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n", "HTTP/1.1 400", "only CONNECT and absolute http://"},
		{"origin form", "web.test", "GET / HTTP/1.1\r\nHost: web.test\r\n\r\n", "HTTP/1.1 400", "only CONNECT"},
		{"garbage", "web.test", "\x16\x03\x01hello\r\n\r\n", "HTTP/1.1 400", "not an HTTP proxy request"},
		{"head too large", "web.test", "GET http://web.test/ HTTP/1.1\r\nX: " + strings.Repeat("a", egress.MaxHeadBytes) + "\r\n\r\n", "HTTP/1.1 400", "not an HTTP proxy request"},
		{"bad port", "web.test", "CONNECT web.test:99999 HTTP/1.1\r\n\r\n", "HTTP/1.1 400", "port must be a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, addr := w.proxy(t, sandbox.Network{Allow: []string{tt.allow}})
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			go io.WriteString(c, tt.send)
			got := make([]byte, len(tt.want))
			_, err = io.ReadFull(c, got)
			c.Close()
			log := p.Close()
			if err != nil || string(got) != tt.want {
				t.Errorf("answer %q, %v; want %q", got, err, tt.want)
			}
			if len(log.Connections) != 1 || !strings.Contains(log.Connections[0].Reason, tt.reason) {
				t.Errorf("log %+v, want one connection with reason %q", log.Connections, tt.reason)
			}
		})
	}
}

// TestProxyCloseLeavesNothing: once closed the listener is gone and live
// tunnels are ended.
func TestProxyCloseLeavesNothing(t *testing.T) {
	w := newWorld(t)
	p, addr := w.proxy(t, sandbox.Network{Allow: []string{"198.51.100.2:7"}})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT 198.51.100.2:7 HTTP/1.1\r\n\r\n")
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT answered %v, %v", resp, err)
	}
	p.Close() // the tunnel is open and idle
	if _, err := br.ReadByte(); err == nil {
		t.Errorf("the tunnel is still open after Close")
	}
	if c2, err := net.Dial("tcp", addr); err == nil {
		c2.Close()
		t.Errorf("the listener still accepts after Close")
	}
}
