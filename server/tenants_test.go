package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
)

// TestAuthentication: without keys the server serves the default tenant;
// once a key exists, or when keys are required, every /v1/ request needs
// a valid one, while /healthz, /metrics and /openapi.json stay open.
func TestAuthentication(t *testing.T) {
	ts := newTestServer(t, nil)
	if r := ts.do("GET", "/v1/runs", nil); r.status != http.StatusOK {
		t.Fatalf("no keys, no header: status %d, want 200", r.status)
	}
	rec := ts.run("/v1/runs", python("print(1)"))
	if got := ts.record(rec.ID); got.Tenant != server.DefaultTenant {
		t.Errorf("tenant %q, want %q", got.Tenant, server.DefaultTenant)
	}
	key := ts.newKey("acme")
	// The count of keys is cached; a new server sees the key at once.
	ts = newTestServerOn(t, ts.store, nil)
	tests := []struct {
		name, header string
		want         int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"unknown key", "Bearer crk_" + strings.Repeat("A", 43), http.StatusUnauthorized},
		{"not bearer", "Basic " + key, http.StatusUnauthorized},
		{"empty bearer", "Bearer ", http.StatusUnauthorized},
		{"valid key", "Bearer " + key, http.StatusOK},
		{"lower-case scheme", "bearer " + key, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.http.URL+"/v1/runs", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	ts.do("GET", "/v1/runs", nil).wantError(t, http.StatusUnauthorized, "unauthorized")
	for _, open := range []string{"/healthz", "/metrics", "/openapi.json"} {
		if r := ts.do("GET", open, nil); r.status != http.StatusOK {
			t.Errorf("GET %s without a key: %d", open, r.status)
		}
	}
	// The default tenant's runs are not the key's tenant's.
	ts.as(key).do("GET", "/v1/runs/"+rec.ID, nil).wantError(t, http.StatusNotFound, "not_found")

	required := newTestServer(t, func(c *config) { c.server.RequireKeys = true })
	required.do("GET", "/v1/runs", nil).wantError(t, http.StatusUnauthorized, "unauthorized")
}

// TestTenantIsolation: one tenant's runs, artifacts, cache entries and
// sessions are invisible to another: 404, never 403, and never in a
// listing.
func TestTenantIsolation(t *testing.T) {
	base := newTestServer(t, nil)
	alice, bob := base.as(base.newKey("alice")), base.as(base.newKey("bob"))

	code := "open('out.txt', 'w').write('alice only')\nprint('secret of alice')"
	run := alice.run("/v1/runs", python(code))
	if run.Status != "ok" || len(run.Artifacts) != 1 {
		t.Fatalf("alice's run: %+v", run)
	}
	bob.do("GET", "/v1/runs/"+run.ID, nil).wantError(t, http.StatusNotFound, "not_found")
	bob.do("GET", "/v1/runs/"+run.ID+"/artifacts/out.txt", nil).wantError(t, http.StatusNotFound, "not_found")
	if r := alice.do("GET", "/v1/runs/"+run.ID+"/artifacts/out.txt", nil); r.status != http.StatusOK || string(r.body) != "alice only" {
		t.Errorf("alice's artifact: %d %q", r.status, r.body)
	}
	var list struct{ Runs []api.Run }
	bob.do("GET", "/v1/runs", nil).json(t, &list)
	if len(list.Runs) != 0 {
		t.Errorf("bob lists %d runs, want none", len(list.Runs))
	}
	// The cache is per tenant: bob's identical request runs anew.
	if again := bob.run("/v1/runs?cache=1", python("print('same')")); again.CacheHit {
		t.Error("first run of bob was a cache hit")
	}
	alice.run("/v1/runs?cache=1", python("print('same')"))
	if hit := alice.run("/v1/runs?cache=1", python("print('same')")); !hit.CacheHit {
		t.Error("alice's repeat was not a cache hit")
	}

	r := alice.do("POST", "/v1/sessions", map[string]any{"language": "python"})
	if r.status != http.StatusCreated {
		t.Fatalf("create session: %d %s", r.status, r.body)
	}
	var sess struct{ ID string }
	r.json(t, &sess)
	alice.do("POST", "/v1/sessions/"+sess.ID+"/exec", map[string]any{"code": "x = 41"})
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/sessions/" + sess.ID + "/exec"},
		{"GET", "/v1/sessions/" + sess.ID + "/files"},
		{"GET", "/v1/sessions/" + sess.ID + "/files/a.txt"},
		{"PUT", "/v1/sessions/" + sess.ID + "/files/a.txt"},
		{"DELETE", "/v1/sessions/" + sess.ID},
	} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"code": "print(x)"}
		}
		bob.do(c.method, c.path, body).wantError(t, http.StatusNotFound, "not_found")
	}
	var cell struct{ Stdout string }
	alice.do("POST", "/v1/sessions/"+sess.ID+"/exec", map[string]any{"code": "print(x + 1)"}).json(t, &cell)
	if cell.Stdout != "42\n" {
		t.Errorf("alice's session after bob's attempts: stdout %q", cell.Stdout)
	}
	if r := alice.do("DELETE", "/v1/sessions/"+sess.ID, nil); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	// A closed session is 410 to its tenant and still 404 to others.
	alice.do("POST", "/v1/sessions/"+sess.ID+"/exec", map[string]any{"code": "1"}).wantError(t, http.StatusGone, "session_closed")
	bob.do("POST", "/v1/sessions/"+sess.ID+"/exec", map[string]any{"code": "1"}).wantError(t, http.StatusNotFound, "not_found")
}

// TestArtifactDownload: an artifact's stored bytes are served with its
// media type and digest, binary content intact.
func TestArtifactDownload(t *testing.T) {
	ts := newTestServer(t, nil)
	code := "import os\nos.makedirs('d', exist_ok=True)\nopen('d/bin.dat', 'wb').write(bytes(range(256)))"
	run := ts.run("/v1/runs", python(code))
	if run.Status != "ok" || len(run.Artifacts) != 1 {
		t.Fatalf("run: %+v", run)
	}
	r := ts.do("GET", "/v1/runs/"+run.ID+"/artifacts/d/bin.dat", nil)
	want := make([]byte, 256)
	for i := range want {
		want[i] = byte(i)
	}
	sum := sha256.Sum256(want)
	if r.status != http.StatusOK || !bytes.Equal(r.body, want) {
		t.Fatalf("download: %d, %d bytes", r.status, len(r.body))
	}
	if etag := r.header.Get("ETag"); etag != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Errorf("ETag %s", etag)
	}
	if r.header.Get("Content-Security-Policy") != "sandbox" || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("artifact served without CSP sandbox / nosniff: %v", r.header)
	}
	ts.do("GET", "/v1/runs/"+run.ID+"/artifacts/nope", nil).wantError(t, http.StatusNotFound, "not_found")
	if rec := ts.record(run.ID); len(rec.Artifacts) != 1 || rec.Artifacts[0].Name != "d/bin.dat" {
		t.Errorf("record artifacts %+v", rec.Artifacts)
	}
}

// TestTenantLimits: a tenant's concurrent runs, sessions and request size
// are bounded by its own limits, without touching another tenant's.
func TestTenantLimits(t *testing.T) {
	base := newTestServer(t, func(c *config) {
		c.MaxConcurrent, c.MaxQueue = 4, 4
		c.TenantDefaults = service.TenantLimits{MaxConcurrentRuns: 1, MaxSessions: 1, MaxRequestBytes: 4096}
		c.Tenants = map[string]service.TenantLimits{"big": {MaxConcurrentRuns: 8, MaxSessions: 8, MaxRequestBytes: 1 << 20}}
	})
	small, big := base.as(base.newKey("small")), base.as(base.newKey("big"))

	// small's second concurrent run is refused; big's are not.
	slow := python("import time; time.sleep(1.5)")
	var wg sync.WaitGroup
	statuses := make(chan int, 4)
	for _, ts := range []*testServer{small, small, big, big} {
		wg.Go(func() { statuses <- ts.do("POST", "/v1/runs?cache=0", slow).status })
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[http.StatusOK] != 3 || counts[http.StatusTooManyRequests] != 1 {
		t.Errorf("statuses %v, want three 200 and one 429", counts)
	}

	if r := small.do("POST", "/v1/sessions", map[string]any{"language": "python"}); r.status != http.StatusCreated {
		t.Fatalf("first session: %d %s", r.status, r.body)
	}
	small.do("POST", "/v1/sessions", map[string]any{"language": "python"}).wantError(t, http.StatusTooManyRequests, "too_many_requests")
	for range 2 {
		if r := big.do("POST", "/v1/sessions", map[string]any{"language": "python"}); r.status != http.StatusCreated {
			t.Fatalf("big's session: %d %s", r.status, r.body)
		}
	}

	large := python("print(1)  # " + strings.Repeat("x", 5000))
	small.do("POST", "/v1/runs", large).wantError(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	if r := big.do("POST", "/v1/runs", large); r.status != http.StatusOK {
		t.Errorf("big's large request: %d %s", r.status, r.body)
	}
}
