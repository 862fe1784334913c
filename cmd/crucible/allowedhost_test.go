package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestServeAllowedHost: crucible serve answers a Host it was told with
// --allowed-host and refuses others (DNS rebinding) with 403, and a bad
// --allowed-host is a usage error naming the flag. (The local socket is no
// HTTP: TestRunThroughServeSameAsLocal covers it.)
func TestServeAllowedHost(t *testing.T) {
	testenv.Root(t)
	for _, bad := range []string{"crucible.test:8080", "*.crucible.test", "http://crucible.test"} {
		_, stderr, code := cli{}.run(t, "serve", "--addr", "127.0.0.1:0", "--socket", "", "--db", t.TempDir()+"/runs.db", "--allowed-host", bad)
		if code != exitUsage || !strings.Contains(stderr, "--allowed-host") {
			t.Errorf("--allowed-host %q: exit %d, want %d naming --allowed-host; stderr:\n%s", bad, code, exitUsage, stderr)
		}
	}
	_, base := startLocalServe(t, "", "--allowed-host", "crucible.test", "--prestart", "0")
	for host, want := range map[string]int{"crucible.test": 200, "CRUCIBLE.test:443": 200, "localhost": 200, "evil.test": 403, "crucible.test.evil.test": 403} {
		req, _ := http.NewRequest("GET", base+"/healthz", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /healthz with Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
