package e2bapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// The tests drive a real server.Server, with this package mounted at
// /e2b, over a service of two native runtimes: the datascience image (the
// default, so that both of E2B's templates run in it) and the host's
// directories ("host"). They need root and the datascience image.

var (
	runtimesOnce sync.Once
	dsRT, hostRT *linux.Runtime
	dsDigest     string
	runtimesErr  error
)

// runtimes returns the native runtimes the tests share.
func runtimes(tb testing.TB) (ds, host *linux.Runtime, digest string) {
	tb.Helper()
	testenv.Root(tb)
	img := testenv.Image(tb, "datascience")
	runtimesOnce.Do(func() {
		dsRT, runtimesErr = linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest})
		if runtimesErr == nil {
			hostRT, runtimesErr = linux.New(linux.Options{})
		}
		dsDigest = img.Digest
	})
	if runtimesErr != nil {
		tb.Fatalf("linux.New: %v", runtimesErr)
	}
	return dsRT, hostRT, dsDigest
}

// testServer is a running server, its store, and its base URL.
type testServer struct {
	t     *testing.T
	svc   *service.Service
	store store.Store
	http  *httptest.Server
	url   string // the E2B API's base: the server's address and /e2b
}

// newTestServer starts a server; adjust, if set, changes the service's
// config.
func newTestServer(t *testing.T, adjust func(*service.Config)) *testServer {
	t.Helper()
	ds, host, digest := runtimes(t)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := service.Config{Runtime: ds, ImageName: "datascience", ImageDigest: digest, Store: st, Redactor: red, Logger: quiet,
		Images: []service.Image{{Name: "host", Runtime: host}}}
	if adjust != nil {
		adjust(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
	})
	srv, err := server.New(server.Config{Service: svc, Keys: st, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &testServer{t: t, svc: svc, store: st, http: hs, url: hs.URL + server.E2BPrefix}
}

// newKey stores a new E2B-shaped key of tenant and returns its secret.
func (ts *testServer) newKey(tenant string) string {
	ts.t.Helper()
	secret, k, err := store.NewAPIKeyOf(store.KeyE2B, tenant, "test")
	if err != nil {
		ts.t.Fatal(err)
	}
	if err := ts.store.CreateKey(context.Background(), k); err != nil {
		ts.t.Fatal(err)
	}
	return secret
}

// response is an HTTP answer, body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into v.
func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

// e2bError is the error body every failure carries.
type e2bError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field"`
	Rule    string `json:"rule"`
}

// wantError checks that r is an error with status and returns its body.
func (r response) wantError(t *testing.T, status int) e2bError {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	var e e2bError
	r.json(t, &e)
	if e.Code != status || e.Message == "" {
		t.Fatalf("error body %s: want code %d and a message", r.body, status)
	}
	return e
}

// do sends a request to path under the E2B API with the headers given
// (name, value pairs); body is JSON-encoded unless it is []byte or nil.
func (ts *testServer) do(method, path string, body any, headers ...string) response {
	ts.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			ts.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// created is the answer to POST /sandboxes.
type created struct {
	SandboxID          string `json:"sandboxID"`
	TemplateID         string `json:"templateID"`
	ClientID           string `json:"clientID"`
	EnvdVersion        string `json:"envdVersion"`
	EnvdAccessToken    string `json:"envdAccessToken"`
	TrafficAccessToken string `json:"trafficAccessToken"`
}

// create makes a sandbox with key and the body's fields.
func (ts *testServer) create(key string, body map[string]any) created {
	ts.t.Helper()
	r := ts.do("POST", "/sandboxes", body, "X-API-Key", key)
	if r.status != http.StatusCreated {
		ts.t.Fatalf("POST /sandboxes: %d %s", r.status, r.body)
	}
	var c created
	r.json(ts.t, &c)
	return c
}

// data returns the headers of a data-plane request to sandbox id on
// port, with token.
func data(id, port, token string) []string {
	return []string{"E2b-Sandbox-Id", id, "E2b-Sandbox-Port", port, "X-Access-Token", token}
}

// waitSessionsClosed waits until the tenants have no open session (a
// killed sandbox's session is closed just after the kill's answer), and
// fails t if that takes over 10 s.
func (ts *testServer) waitSessionsClosed(tenants ...string) {
	ts.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n := 0
		for _, tenant := range tenants {
			n += len(ts.svc.Sessions(tenant))
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("%d sessions of %v are still open 10 s after every sandbox was killed or expired", n, tenants)
		}
	}
}
