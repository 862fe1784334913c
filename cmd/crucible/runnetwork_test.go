package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy/egress/egresstest"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestRunAllow: crucible run --allow reaches the host it names (a server
// of the test's in a network namespace, at a documentation address) and
// nothing else; the summary counts the connections, --json lists them.
func TestRunAllow(t *testing.T) {
	testenv.Root(t)
	web := egresstest.NewHost(t, "198.51.100.4/30")
	srv := &httptest.Server{Listener: web.Listen(t, 80), Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from web")
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := web.Addr.String()
	fetch := fmt.Sprintf(`import urllib.request, urllib.error
try:
    print(urllib.request.urlopen("http://%s/", timeout=10).read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except OSError as e:
    print("no network:", e)`, addr)
	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  string // a part of it
		summary string // a part of stderr
	}{
		{"allowed", []string{"--allow", addr}, 0, "hello from web", "network 1 allowed, "},
		{"allowed with port", []string{"--allow", addr + ":80"}, 0, "hello from web", "network 1 allowed"},
		{"other host allowed", []string{"--allow", "203.0.113.99"}, 0, "403 crucible egress proxy: " + addr + " port 80 is not in the allowlist",
			"network 1 refused (" + addr + ":80: " + addr + " port 80 is not in the allowlist)"},
		{"no --allow: no network", nil, 0, "no network:", "crucible: ok"},
		{"bad entry", []string{"--allow", addr, "--allow", "not a host!"}, exitUsage, "", `--allow "not a host!": must be a host name`},
		{"loopback refused when given", []string{"--allow", "127.0.0.1:28411"}, exitUsage, "",
			`--allow "127.0.0.1:28411": 127.0.0.1 is a loopback address: never reachable`},
		{"metadata refused when given", []string{"--allow", "169.254.169.254"}, exitUsage, "", "169.254.169.254 is the cloud metadata address: never reachable"},
		{"private prefix refused when given", []string{"--allow", "10.0.0.0/8"}, exitUsage, "", "every address of 10.0.0.0/8 is a private address (RFC 1918): never reachable"},
		{"localhost refused when given", []string{"--allow", "localhost:8000"}, exitUsage, "", "localhost always resolves to a loopback address: never reachable"},
		{"a URL", []string{"--allow", "https://example.com/x"}, exitUsage, "", `--allow "https://example.com/x": give a host, not a URL: "example.com"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run"}, tt.args...)
			stdout, stderr, code := cli{}.run(t, append(args, "-c", fetch)...)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.summary) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout, stderr, tt.code, tt.stdout, tt.summary)
			}
			if tt.args == nil && strings.Contains(stderr, "network") {
				t.Errorf("a run without --allow reports network: %q", stderr)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		stdout, stderr, code := cli{}.run(t, "run", "--json", "--allow", addr, "-c", fetch)
		var res sandbox.Result
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 {
			t.Fatalf("exit %d, %v: %s %s", code, err, stdout, stderr)
		}
		if res.Network == nil || len(res.Network.Connections) != 1 || res.Network.Connections[0].Verdict != "allowed" ||
			res.Network.Connections[0].IP != addr {
			t.Errorf("network %+v, want one allowed connection to %s", res.Network, addr)
		}
	})
}

func TestNetworkSummary(t *testing.T) {
	conn := func(host string, port int, verdict string) sandbox.Connection {
		return sandbox.Connection{Host: host, Port: port, Verdict: verdict}
	}
	tests := []struct {
		name string
		log  sandbox.NetworkLog
		want string
	}{
		{"none", sandbox.NetworkLog{}, "network no connection, 0B sent, 0B received"},
		{"mixed", sandbox.NetworkLog{Connections: []sandbox.Connection{
			conn("a.test", 443, "allowed"), conn("b.test", 80, "refused"), conn("b.test", 80, "refused"), conn("c.test", 80, "failed"),
		}, BytesSent: 1500, BytesReceived: 20000}, "network 1 allowed, 2 refused, 1 failed (b.test:80; c.test:80), 1.5kB sent, 20kB received"},
		{"many refused, unlisted counted", sandbox.NetworkLog{Connections: []sandbox.Connection{
			conn("a.test", 80, "refused"), conn("b.test", 80, "refused"), conn("c.test", 80, "refused"), conn("d.test", 80, "refused"),
		}, Unlisted: 6}, "network 10 refused (a.test:80; b.test:80; c.test:80; ...), 0B sent, 0B received"},
		{"ipv6", sandbox.NetworkLog{Connections: []sandbox.Connection{conn("::1", 80, "refused")}}, "network 1 refused ([::1]:80), 0B sent, 0B received"},
		{"reasons", sandbox.NetworkLog{Connections: []sandbox.Connection{
			{Host: "127.0.0.1", Port: 28411, Verdict: "refused", Reason: "127.0.0.1 is a loopback address: never reachable"},
			{Host: "127.0.0.1", Port: 28411, Verdict: "refused", Reason: "127.0.0.1 is a loopback address: never reachable"},
			{Host: "nowhere.test", Port: 443, Verdict: "failed", Reason: "resolve nowhere.test: no such host"},
		}}, "network 2 refused, 1 failed (127.0.0.1:28411: 127.0.0.1 is a loopback address: never reachable; nowhere.test:443: resolve nowhere.test: no such host), 0B sent, 0B received"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := networkSummary(&tt.log); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
