package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// imageRuntime is a fake runtime of one image, for the tests that need
// no sandbox: a run answers ok with the image's name as its output and its
// digest in the result; a session echoes its cells. It counts what it ran.
type imageRuntime struct {
	name, digest string
	runs         atomic.Int64
	sessions     atomic.Int64
	execs        atomic.Int64 // cells run in its sessions
}

func (f *imageRuntime) Run(_ context.Context, req sandbox.Request) (sandbox.Result, error) {
	f.runs.Add(1)
	if err := req.Validate(); err != nil {
		return sandbox.Result{}, err
	}
	return sandbox.Result{Status: sandbox.StatusOK, Language: req.Language, ImageDigest: f.digest,
		Stdout: sandbox.Data(f.name), Stderr: sandbox.Data{}, Limits: req.Limits.WithDefaults()}, nil
}

func (f *imageRuntime) NewSession(_ context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	n := f.sessions.Add(1)
	return &echoSession{id: fmt.Sprintf("ses_%s_%d", f.name, n), image: f.name, execs: &f.execs}, nil
}

// echoSession answers a cell with its code and the image's name.
type echoSession struct {
	id, image string
	execs     *atomic.Int64
	mu        sync.Mutex
	closed    bool
}

func (s *echoSession) ID() string { return s.id }
func (s *echoSession) Exec(_ context.Context, c sandbox.Cell) (sandbox.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.Result{}, sandbox.ErrSessionClosed
	}
	s.execs.Add(1)
	return sandbox.Result{Status: sandbox.StatusOK, Language: sandbox.Python, Stdout: sandbox.Data(s.image + ":" + c.Code), Stderr: sandbox.Data{}}, nil
}
func (s *echoSession) WriteFile(context.Context, string, []byte) error       { return nil }
func (s *echoSession) ReadFile(context.Context, string) ([]byte, error)      { return nil, nil }
func (s *echoSession) ListFiles(context.Context) ([]sandbox.FileInfo, error) { return nil, nil }
func (s *echoSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// newFakeServer starts a server on rt with a SQLite store; adjust, if
// set, changes its config. It needs no root.
func newFakeServer(t *testing.T, rt *imageRuntime, adjust func(*config)) *testServer {
	t.Helper()
	st := openStore(t)
	cfg := config{}
	cfg.Runtime, cfg.Store = rt, st
	if adjust != nil {
		adjust(&cfg)
	}
	srv, svc := newServer(t, cfg)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &testServer{T: t, srv: srv, svc: svc, http: hs, store: st}
}
