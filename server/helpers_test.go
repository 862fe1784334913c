package server_test

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

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// The end-to-end tests drive a real httptest.Server around Handler, with
// the native runtime (they need root) and a SQLite store in a temporary
// file.

var (
	runtimeOnce sync.Once
	sharedRT    *linux.Runtime
	runtimeErr  error
)

// nativeRuntime returns the native runtime the tests share; it needs
// root.
func nativeRuntime(tb testing.TB) *linux.Runtime {
	tb.Helper()
	testenv.Root(tb)
	runtimeOnce.Do(func() { sharedRT, runtimeErr = linux.New(linux.Options{}) })
	if runtimeErr != nil {
		tb.Fatalf("linux.New: %v", runtimeErr)
	}
	return sharedRT
}

// openStore opens a SQLite store in a temporary file, closed when tb ends.
func openStore(tb testing.TB) store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "runs.db"))
	if err != nil {
		tb.Fatalf("store.Open: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

func newRedactor(tb testing.TB) *policy.Redactor {
	tb.Helper()
	r, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// testServer is a running server and what it was built from.
type testServer struct {
	*testing.T
	srv   *server.Server
	svc   *service.Service
	http  *httptest.Server
	store store.Store
	// key, when set, is sent as the request's API key.
	key string
}

// as returns ts sending key as its API key.
func (ts *testServer) as(key string) *testServer {
	c := *ts
	c.key = key
	return &c
}

// newKey stores a new API key of tenant and returns its secret.
func (ts *testServer) newKey(tenant string) string {
	ts.Helper()
	secret, k, err := store.NewAPIKey(tenant, "test")
	if err != nil {
		ts.Fatal(err)
	}
	if err := ts.store.CreateKey(context.Background(), k); err != nil {
		ts.Fatal(err)
	}
	return secret
}

// config is what a test server is built from: its service's and its own.
type config struct {
	service.Config
	server server.Config
}

// newServer builds a server on cfg, filling in a store, a redactor and a
// discarding logger where cfg has none; the service is shut down when tb
// ends.
func newServer(tb testing.TB, cfg config) (*server.Server, *service.Service) {
	tb.Helper()
	if cfg.Store == nil {
		cfg.Store = openStore(tb)
	}
	if cfg.Redactor == nil {
		cfg.Redactor = newRedactor(tb)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Logger, cfg.server.Logger = quiet, quiet
	svc, err := service.New(cfg.Config)
	if err != nil {
		tb.Fatalf("service.New: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
	})
	cfg.server.Service, cfg.server.Keys = svc, cfg.Store
	srv, err := server.New(cfg.server)
	if err != nil {
		tb.Fatalf("server.New: %v", err)
	}
	return srv, svc
}

// newTestServer starts a server on the native runtime, with the cache on
// (for the runs that ask for it); adjust, if set, changes its config.
func newTestServer(t *testing.T, adjust func(*config)) *testServer {
	t.Helper()
	return newTestServerOn(t, openStore(t), adjust)
}

// newTestServerOn is newTestServer with the store st.
func newTestServerOn(t *testing.T, st store.Store, adjust func(*config)) *testServer {
	t.Helper()
	cfg := config{Config: service.Config{Runtime: nativeRuntime(t), Store: st, CacheTTL: 10 * time.Minute}}
	if adjust != nil {
		adjust(&cfg)
	}
	srv, svc := newServer(t, cfg)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &testServer{T: t, srv: srv, svc: svc, http: hs, store: st}
}

// response is an HTTP answer, body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into v, failing the test if it is not JSON.
func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

// apiError is the error body every failure carries.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
		Rule    string `json:"rule"`
	} `json:"error"`
}

// wantError checks that r is an error with status and code, and returns
// its body.
func (r response) wantError(t *testing.T, status int, code string) apiError {
	t.Helper()
	var e apiError
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	r.json(t, &e)
	if e.Error.Code != code || e.Error.Message == "" {
		t.Fatalf("error %+v, want code %q and a message", e.Error, code)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	return e
}

// do sends a request; body is JSON-encoded unless it is []byte or nil,
// and a body is sent as Content-Type: application/json.
func (ts *testServer) do(method, path string, body any) response {
	ts.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			ts.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, ts.http.URL+path, rd)
	if err != nil {
		ts.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ts.key != "" {
		req.Header.Set("Authorization", "Bearer "+ts.key)
	}
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		ts.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// run posts a run and decodes its 200 answer.
func (ts *testServer) run(path string, req map[string]any) api.RunResponse {
	ts.Helper()
	r := ts.do("POST", path, req)
	if r.status != http.StatusOK {
		ts.Fatalf("POST %s: status %d; body %s", path, r.status, r.body)
	}
	var rr api.RunResponse
	r.json(ts.T, &rr)
	if rr.ID == "" {
		ts.Fatalf("POST %s: no id in %s", path, r.body)
	}
	return rr
}

// record reads a run record through the API.
func (ts *testServer) record(id string) api.Run {
	ts.Helper()
	r := ts.do("GET", "/v1/runs/"+id, nil)
	if r.status != http.StatusOK {
		ts.Fatalf("GET run %s: status %d; body %s", id, r.status, r.body)
	}
	var rec api.Run
	r.json(ts.T, &rec)
	return rec
}

func python(code string) map[string]any { return map[string]any{"language": "python", "code": code} }
