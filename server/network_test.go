package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/policy/egress/egresstest"
)

// TestRunNetwork: the API takes "network" as "none" or {"allow": [...]},
// refuses a bad one naming the field, refuses a tenant the config does
// not allow network with 403, and runs an allowed one on the real
// runtime, reaching a test host (in a network namespace of the test's, at
// a documentation address) and recording the connection.
func TestRunNetwork(t *testing.T) {
	yes := true
	web := egresstest.NewHost(t, "203.0.113.8/30")
	srv := &httptest.Server{Listener: web.Listen(t, 80), Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from web")
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	code := fmt.Sprintf("import urllib.request\nprint(urllib.request.urlopen('http://%s/', timeout=10).read().decode())", web.Addr)
	withNet := func(network any) map[string]any {
		r := python(code)
		r["network"] = network
		return r
	}
	allow := map[string]any{"allow": []string{web.Addr.String()}}

	t.Run("refused", func(t *testing.T) {
		ts := newTestServer(t, nil) // no allow_network: no tenant may
		tests := []struct {
			name    string
			network any
			status  int
			code    string
			field   string
			rule    string
		}{
			{"tenant not allowed", allow, http.StatusForbidden, api.CodeForbidden, "network", "allow_network"},
			{"unknown policy", "host", http.StatusBadRequest, api.CodeInvalidRequest, "network", `must be "none" or an object`},
			{"bad entry", map[string]any{"allow": []string{"a.test", "not a host"}}, http.StatusBadRequest, api.CodeInvalidRequest, "network.allow[1]", "host name"},
			{"unknown member", map[string]any{"allow": []string{"a.test"}, "deny": []string{"b.test"}}, http.StatusBadRequest, api.CodeInvalidRequest, "", "deny"},
			{"loopback entry", map[string]any{"allow": []string{"127.0.0.1:28411"}}, http.StatusBadRequest, api.CodeInvalidRequest, "network.allow[0]",
				"127.0.0.1 is a loopback address: never reachable"},
			{"metadata entry", map[string]any{"allow": []string{"a.test", "169.254.169.254"}}, http.StatusBadRequest, api.CodeInvalidRequest, "network.allow[1]",
				"169.254.169.254 is the cloud metadata address: never reachable"},
			{"URL entry", map[string]any{"allow": []string{"https://example.com/x"}}, http.StatusBadRequest, api.CodeInvalidRequest, "network.allow[0]",
				`give a host, not a URL: "example.com"`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := ts.do("POST", "/v1/runs", withNet(tt.network)).wantError(t, tt.status, tt.code)
				if tt.field != "" && e.Error.Field != tt.field || !strings.Contains(e.Error.Rule+e.Error.Message, tt.rule) {
					t.Errorf("error %+v, want field %q and a rule with %q", e.Error, tt.field, tt.rule)
				}
			})
		}
		// "none" is the default, as before.
		if rr := ts.run("/v1/runs", withNet("none")); rr.Status != "error" || rr.Network != nil {
			t.Errorf("network none: status %s (want error: no network), log %+v", rr.Status, rr.Network)
		}
	})

	t.Run("allowed", func(t *testing.T) {
		ts := newTestServer(t, func(c *config) { c.TenantDefaults.AllowNetwork = &yes })
		rr := ts.run("/v1/runs", withNet(allow))
		if rr.Status != "ok" || strings.TrimSpace(string(rr.Stdout)) != "hello from web" {
			t.Fatalf("status %s, stdout %q, stderr %q", rr.Status, rr.Stdout, rr.Stderr)
		}
		rec := ts.record(rr.ID)
		if rec.Network == nil || len(rec.Network.Connections) != 1 {
			t.Fatalf("record network %+v, want one connection", rec.Network)
		}
		c := rec.Network.Connections[0]
		if c.Verdict != "allowed" || c.IP != web.Addr.String() || c.Port != 80 || c.BytesSent == 0 || c.BytesReceived == 0 {
			t.Errorf("recorded %+v", c)
		}
	})
}
