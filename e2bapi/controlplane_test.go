package e2bapi_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/e2bapi"
)

// TestControlPlane: a sandbox is created (201, with everything the SDKs
// read), described, listed, given a new timeout, connected to (the same
// token), killed (204), and then not found; its session is gone with it.
func TestControlPlane(t *testing.T) {
	ts := newTestServer(t, nil)
	key := ts.newKey("acme")
	c := ts.create(key, map[string]any{"templateID": "code-interpreter-v1", "timeout": 300, "metadata": map[string]string{"job": "7"}, "envVars": map[string]string{"A": "1"}})
	if c.SandboxID == "" || c.TemplateID != "code-interpreter-v1" || c.ClientID == "" || c.EnvdVersion != e2bapi.EnvdVersion ||
		!regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(c.EnvdAccessToken) || c.TrafficAccessToken != c.EnvdAccessToken {
		t.Fatalf("create answered %+v", c)
	}
	if _, err := ts.svc.Session("acme", c.SandboxID); err != nil {
		t.Fatalf("the sandbox is no session of its tenant: %v", err)
	}
	var detail struct {
		SandboxID, TemplateID, State string
		Metadata                     map[string]string
		StartedAt, EndAt             time.Time
		MemoryMB                     int64
	}
	r := ts.do("GET", "/sandboxes/"+c.SandboxID, nil, "X-API-Key", key)
	r.json(t, &detail)
	if r.status != 200 || detail.SandboxID != c.SandboxID || detail.State != "running" || detail.Metadata["job"] != "7" ||
		detail.MemoryMB <= 0 || d(detail.EndAt.Sub(detail.StartedAt)) != 300 {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/v2/sandboxes", "/sandboxes", "/v2/sandboxes?metadata=job%3D7", "/v2/sandboxes?state=running"} {
		var list []struct{ SandboxID string }
		ts.do("GET", path, nil, "X-API-Key", key).json(t, &list)
		if len(list) != 1 || list[0].SandboxID != c.SandboxID {
			t.Errorf("GET %s: %+v, want the one sandbox", path, list)
		}
	}
	for _, path := range []string{"/v2/sandboxes?metadata=job%3D8", "/v2/sandboxes?state=paused"} {
		if r := ts.do("GET", path, nil, "X-API-Key", key); string(r.body) != "[]\n" {
			t.Errorf("GET %s: %s, want []", path, r.body)
		}
	}
	if r := ts.do("POST", "/sandboxes/"+c.SandboxID+"/timeout", map[string]any{"timeout": 3600}, "X-API-Key", key); r.status != http.StatusNoContent {
		t.Fatalf("timeout: %d %s", r.status, r.body)
	}
	ts.do("GET", "/sandboxes/"+c.SandboxID, nil, "X-API-Key", key).json(t, &detail)
	if got := time.Until(detail.EndAt); got < 3590*time.Second || got > 3601*time.Second {
		t.Errorf("after a timeout of 3600 s the sandbox ends in %s", got)
	}
	var again created
	r = ts.do("POST", "/v2/sandboxes/"+c.SandboxID+"/connect", map[string]any{"timeout": 10}, "X-API-Key", key)
	r.json(t, &again)
	if r.status != 200 || again.EnvdAccessToken != c.EnvdAccessToken || again.SandboxID != c.SandboxID {
		t.Fatalf("connect: %d %s", r.status, r.body)
	}
	ts.do("GET", "/sandboxes/"+c.SandboxID, nil, "X-API-Key", key).json(t, &detail)
	if time.Until(detail.EndAt) < 3500*time.Second {
		t.Errorf("connect with a timeout of 10 s shortened the sandbox's life to %s", time.Until(detail.EndAt))
	}
	if r := ts.do("DELETE", "/sandboxes/"+c.SandboxID, nil, "X-API-Key", key); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d %s", r.status, r.body)
	}
	ts.do("GET", "/sandboxes/"+c.SandboxID, nil, "X-API-Key", key).wantError(t, 404)
	ts.do("DELETE", "/sandboxes/"+c.SandboxID, nil, "X-API-Key", key).wantError(t, 404)
	ts.do("GET", "/health", nil, data(c.SandboxID, e2bapi.EnvdPort, c.EnvdAccessToken)...).wantError(t, http.StatusBadGateway)
	ts.waitSessionsClosed("acme")
}

// d rounds a duration to seconds.
func d(x time.Duration) int64 { return int64(x.Round(time.Second) / time.Second) }

// TestCreateRefusals: what a sandbox cannot be is refused before any
// session starts, naming the field and the rule.
func TestCreateRefusals(t *testing.T) {
	ts := newTestServer(t, nil)
	key := ts.newKey("acme")
	for _, tc := range []struct {
		name   string
		body   any
		status int
		field  string
		rule   string
	}{
		{"no template", map[string]any{}, 400, "templateID", "required"},
		{"unknown template", map[string]any{"templateID": "nope"}, 400, "templateID", "datascience, host"},
		{"timeout too short", map[string]any{"templateID": "base", "timeout": 0}, 400, "timeout", "1 to 86400"},
		{"timeout too long", map[string]any{"templateID": "base", "timeout": 90000}, 400, "timeout", "1 to 86400"},
		{"internet", map[string]any{"templateID": "base", "allow_internet_access": true}, 400, "allow_internet_access", "no network"},
		{"network", map[string]any{"templateID": "base", "network": map[string]any{"allowOut": []string{"x"}}}, 400, "network", "no network"},
		{"auto-pause", map[string]any{"templateID": "base", "autoPause": true}, 400, "autoPause", "cannot be paused"},
		{"mcp", map[string]any{"templateID": "base", "mcp": map[string]any{}}, 400, "mcp", "MCP"},
		{"metadata", map[string]any{"templateID": "base", "metadata": map[string]string{"": "x"}}, 400, "metadata", "keys must be"},
		{"bad env name", map[string]any{"templateID": "base", "envVars": map[string]string{"1X": "y"}}, 400, "envVars", ""},
		{"wrong type", map[string]any{"templateID": 7}, 400, "templateID", "string"},
		{"not JSON", []byte("{"), 400, "body", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ts.do("POST", "/sandboxes", tc.body, "X-API-Key", key).wantError(t, tc.status)
			if e.Field != tc.field || !strings.Contains(e.Rule, tc.rule) {
				t.Errorf("%+v: want field %q and a rule saying %q", e, tc.field, tc.rule)
			}
		})
	}
	if n := len(ts.svc.Sessions("acme")); n != 0 {
		t.Errorf("refused creates left %d sessions", n)
	}
	c := ts.create(key, map[string]any{"templateID": "base"})
	e := ts.do("POST", "/sandboxes/"+c.SandboxID+"/pause", nil, "X-API-Key", key).wantError(t, http.StatusNotImplemented)
	if !strings.Contains(e.Message, "not supported") {
		t.Errorf("pause: %+v", e)
	}
	ts.do("POST", "/sandboxes/"+c.SandboxID+"/timeout", map[string]any{}, "X-API-Key", key).wantError(t, 400)
	ts.do("POST", "/sandboxes/"+c.SandboxID+"/timeout", map[string]any{"timeout": -1}, "X-API-Key", key).wantError(t, 400)
	ts.do("GET", "/sandboxes/"+c.SandboxID, nil, "X-API-Key", "e2b_0000").wantError(t, http.StatusUnauthorized)
	ts.do("GET", "/sandboxes/"+c.SandboxID, nil).wantError(t, http.StatusUnauthorized)
	ts.do("GET", "/nothing", nil, "X-API-Key", key).wantError(t, http.StatusNotFound)
}
