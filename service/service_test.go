package service_test

// The pipeline's own tests: unprivileged, against a fake runtime that
// runs nothing (the native runtime is tested in sandbox/linux, the whole
// path in server/ and e2e/).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// fakeRuntime answers a run, once its gate opens (at once when gate is
// nil), with its code and a run number as output, so that two runs of the
// same code differ; its sessions end when closed.
type fakeRuntime struct {
	gate chan struct{}
	runs atomic.Int64

	mu     sync.Mutex
	opened []*fakeSession
}

func (f *fakeRuntime) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	n := f.runs.Add(1)
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return sandbox.Result{Status: sandbox.StatusKilled, ExitCode: -1}, nil
		}
	}
	return sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data(fmt.Sprintf("%s #%d\n", req.Code, n)),
		Language: req.Language, Limits: req.Limits.WithDefaults()}, nil
}

func (f *fakeRuntime) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	s := &fakeSession{id: fmt.Sprintf("ses_%d", f.runs.Add(1)), done: make(chan struct{})}
	f.mu.Lock()
	f.opened = append(f.opened, s)
	f.mu.Unlock()
	return s, nil
}

// fakeSession echoes its cells' code; Done is closed when it ends.
type fakeSession struct {
	id   string
	once sync.Once
	done chan struct{}
}

func (s *fakeSession) ID() string { return s.id }
func (s *fakeSession) Exec(_ context.Context, c sandbox.Cell) (sandbox.Result, error) {
	select {
	case <-s.done:
		return sandbox.Result{}, sandbox.ErrSessionClosed
	default:
		return sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data(c.Code)}, nil
	}
}
func (s *fakeSession) WriteFile(context.Context, string, []byte) error       { return nil }
func (s *fakeSession) ReadFile(context.Context, string) ([]byte, error)      { return nil, nil }
func (s *fakeSession) ListFiles(context.Context) ([]sandbox.FileInfo, error) { return nil, nil }
func (s *fakeSession) Close() error                                          { s.once.Do(func() { close(s.done) }); return nil }
func (s *fakeSession) Done() <-chan struct{}                                 { return s.done }

// newService returns a service on rt with a SQLite store, the default
// redaction and a 10-minute cache TTL; adjust, if set, changes the config.
func newService(t *testing.T, rt service.Runtime, adjust func(*service.Config)) *service.Service {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := service.Config{Runtime: rt, Store: st, Redactor: red, CacheTTL: 10 * time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if adjust != nil {
		adjust(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Shutdown(context.Background()) })
	return svc
}

func py(code string) sandbox.Request { return sandbox.Request{Language: sandbox.Python, Code: code} }

// kindOf returns the Kind of a service refusal, 0 for anything else.
func kindOf(err error) service.Kind {
	var e *service.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// TestCacheIsOptIn: the same code runs anew unless the run asks for the
// cache, and with a TTL of zero nothing is cached even when asked.
func TestCacheIsOptIn(t *testing.T) {
	ctx := context.Background()
	for _, ttl := range []time.Duration{10 * time.Minute, 0} {
		rt := &fakeRuntime{}
		svc := newService(t, rt, func(c *service.Config) { c.CacheTTL = ttl })
		a, _ := svc.Run(ctx, "t", py("x"), service.RunOptions{})
		b, _ := svc.Run(ctx, "t", py("x"), service.RunOptions{})
		if a.CacheHit || b.CacheHit || string(a.Stdout) == string(b.Stdout) {
			t.Fatalf("ttl %v, no cache asked: %q (hit %v), %q (hit %v)", ttl, a.Stdout, a.CacheHit, b.Stdout, b.CacheHit)
		}
		c, _ := svc.Run(ctx, "t", py("x"), service.RunOptions{Cache: true})
		d, _ := svc.Run(ctx, "t", py("x"), service.RunOptions{Cache: true})
		if wantHit := ttl > 0; d.CacheHit != wantHit || (string(c.Stdout) == string(d.Stdout)) != wantHit {
			t.Errorf("ttl %v, cache asked: %q then %q (hit %v), want a hit %v", ttl, c.Stdout, d.Stdout, d.CacheHit, wantHit)
		}
	}
}

// TestMaxima: a limit above the server's maximum is refused naming the
// field, nothing runs, and a default above a maximum is lowered to it.
func TestMaxima(t *testing.T) {
	rt := &fakeRuntime{}
	svc := newService(t, rt, func(c *service.Config) { c.Maxima = sandbox.Limits{MemoryBytes: 128 << 20} })
	req := py("x")
	req.Limits.MemoryBytes = 256 << 20
	_, err := svc.Run(context.Background(), "t", req, service.RunOptions{})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || ie.Field != "limits.memory_bytes" {
		t.Fatalf("memory above the maximum: %v, want an input error naming limits.memory_bytes", err)
	}
	if rt.runs.Load() != 0 {
		t.Fatal("a refused request ran")
	}
	res, err := svc.Run(context.Background(), "t", py("x"), service.RunOptions{})
	if err != nil || res.Limits.MemoryBytes != 128<<20 {
		t.Fatalf("default memory under a 128 MiB maximum: %d, %v", res.Limits.MemoryBytes, err)
	}
}

// TestFairShare: by default a tenant holds at most half the run places and
// half the sessions, so another tenant still gets in.
func TestFairShare(t *testing.T) {
	rt := &fakeRuntime{gate: make(chan struct{})}
	svc := newService(t, rt, func(c *service.Config) { c.MaxConcurrent, c.MaxQueue, c.MaxSessions = 1, 3, 4 })
	ctx := context.Background()
	// Half of 1 + 3 places: alice's first two runs are admitted, the third
	// is refused while they wait.
	var ids []string
	for range 2 {
		acc, err := svc.Start(ctx, "alice", py("x"), service.RunOptions{})
		if err != nil {
			t.Fatalf("alice's run within her share: %v", err)
		}
		ids = append(ids, acc.ID)
	}
	if _, err := svc.Start(ctx, "alice", py("x"), service.RunOptions{}); kindOf(err) != service.KindBusy {
		t.Fatalf("alice's third run: %v, want busy", err)
	}
	if _, err := svc.Start(ctx, "bob", py("x"), service.RunOptions{}); err != nil {
		t.Fatalf("bob's run while alice holds her share: %v", err)
	}
	close(rt.gate)
	for _, id := range ids {
		if err := svc.Follow(ctx, "alice", id, func(service.Event) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	// Half of 4 sessions.
	for range 2 {
		if _, err := svc.OpenSession(ctx, "alice", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{}); err != nil {
			t.Fatalf("alice's session within her share: %v", err)
		}
	}
	if _, err := svc.OpenSession(ctx, "alice", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{}); kindOf(err) != service.KindBusy {
		t.Fatalf("alice's third session: %v, want busy", err)
	}
	if _, err := svc.OpenSession(ctx, "bob", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{}); err != nil {
		t.Fatalf("bob's session while alice holds her share: %v", err)
	}
}

// TestSessionEndsOnItsOwn: a session that ends without the service (idle
// expiry, a dead interpreter) is forgotten at once through its Done
// channel: it answers as closed, not found, and frees its place.
func TestSessionEndsOnItsOwn(t *testing.T) {
	rt := &fakeRuntime{}
	svc := newService(t, rt, func(c *service.Config) { c.MaxSessions = 2 })
	ctx := context.Background()
	ss, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{}); kindOf(err) != service.KindBusy {
		t.Fatalf("second session over a share of 1: %v", err)
	}
	if _, err := svc.Session("other", ss.ID()); kindOf(err) != service.KindNotFound {
		t.Fatalf("another tenant's lookup: %v, want not found", err)
	}
	// The runtime ends it on its own: the registry learns it from Done.
	rt.mu.Lock()
	_ = rt.opened[0].Close()
	rt.mu.Unlock()
	var lookErr error
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, lookErr = svc.Session("t", ss.ID()); kindOf(lookErr) == service.KindSessionClosed || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if kindOf(lookErr) != service.KindSessionClosed {
		t.Fatalf("lookup after the session ended: %v, want closed", lookErr)
	}
	if _, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{}); err != nil {
		t.Fatalf("a new session after the first ended: %v", err)
	}
}

// TestPayloadBudget: a body that does not fit waits until one that does
// is released, and one that never fits in time is refused as busy.
func TestPayloadBudget(t *testing.T) {
	svc := newService(t, &fakeRuntime{}, func(c *service.Config) {
		c.MaxBodyBytes, c.MaxPayloadBytes, c.PayloadWait = 1<<20, 2<<20, 200*time.Millisecond
	})
	ctx := context.Background()
	first, err := svc.ReservePayload(ctx, "t", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ReservePayload(ctx, "t", 1<<20); kindOf(err) != service.KindBusy {
		t.Fatalf("a second body while the budget is full: %v, want busy after the wait", err)
	}
	got := make(chan error, 1)
	go func() {
		p, err := svc.ReservePayload(ctx, "t", 1<<20)
		p.Release()
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	first.Release()
	if err := <-got; err != nil {
		t.Fatalf("a body waiting for a release: %v", err)
	}
	if _, err := svc.ReservePayload(ctx, "t", 2<<20); kindOf(err) != service.KindTooLarge {
		t.Fatalf("a body over the limit: %v, want too large", err)
	}
}
