package e2bapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// The envd tests run the RPCs over real sessions of a service on the
// native runtime (they need root), served by httptest.

var (
	envdRTOnce sync.Once
	envdRT     *linux.Runtime
	envdRTErr  error
)

// envdService returns a service on the native runtime with a SQLite store
// and the default redactor; adjust, if set, changes its config.
func envdService(t *testing.T, adjust func(*service.Config)) *service.Service {
	t.Helper()
	testenv.Root(t)
	envdRTOnce.Do(func() { envdRT, envdRTErr = linux.New(linux.Options{}) })
	if envdRTErr != nil {
		t.Fatalf("linux.New: %v", envdRTErr)
	}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := service.Config{Runtime: envdRT, Store: st, Redactor: red, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if adjust != nil {
		adjust(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatalf("service.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
	})
	return svc
}

// envdTestSandbox is a sandbox of the tests: a real session and its
// environment.
type envdTestSandbox struct {
	ss  *service.Session
	env map[string]string
}

func (s envdTestSandbox) session() *service.Session  { return s.ss }
func (s envdTestSandbox) envVars() map[string]string { return s.env }

// envdTestToken is the access token the tests' lookup asks for.
const envdTestToken = "test-access-token"

// envdFixture is a sandbox served by newEnvdRPC.
type envdFixture struct {
	t   *testing.T
	sb  envdTestSandbox
	srv *httptest.Server
}

// newEnvdFixture opens a session of svc (a new service if nil) with env
// and serves the envd RPCs of it; lookup accepts the session's ID with
// envdTestToken only.
func newEnvdFixture(t *testing.T, svc *service.Service, env map[string]string) *envdFixture {
	t.Helper()
	if svc == nil {
		svc = envdService(t, nil)
	}
	ss, err := svc.OpenSession(context.Background(), "e2b-test", sandbox.SessionRequest{}, service.SessionOptions{})
	if err != nil {
		t.Fatalf("OpenSession: %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	f := &envdFixture{t: t, sb: envdTestSandbox{ss: ss, env: env}}
	f.srv = httptest.NewServer(newEnvdRPC(f.lookup))
	t.Cleanup(f.srv.Close)
	return f
}

// lookup is the fixture's lookup: the sandbox's ID and token, else an
// error as the real control plane gives.
func (f *envdFixture) lookup(r *http.Request) (envdSandbox, error) {
	if r.Header.Get("E2b-Sandbox-Id") != f.sb.ss.ID() {
		return nil, errors.New("sandbox " + r.Header.Get("E2b-Sandbox-Id") + " not found")
	}
	if r.Header.Get("X-Access-Token") != envdTestToken {
		return nil, envdError{code: connect.CodeUnauthenticated, msg: "X-Access-Token: wrong or missing"}
	}
	return f.sb, nil
}

// headers are the headers E2B's SDK sends with every envd request.
func (f *envdFixture) headers() http.Header {
	return http.Header{"E2b-Sandbox-Id": {f.sb.ss.ID()}, "X-Access-Token": {envdTestToken}, "E2b-Sandbox-Port": {"49983"}}
}

// envdUnary calls procedure with req, the SDK's headers set, and returns the
// response message.
func envdUnary[Req, Res any](f *envdFixture, ctx context.Context, procedure string, req *Req) (*Res, error) {
	c := connect.NewClient[Req, Res](f.srv.Client(), f.srv.URL+procedure, connect.WithCodec(envdCodec{}))
	r := connect.NewRequest(req)
	for k, v := range f.headers() {
		r.Header()[k] = v
	}
	res, err := c.CallUnary(ctx, r)
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// envdTimedEvent is an event and when it came.
type envdTimedEvent struct {
	ev processEvent
	at time.Time
}

// stream calls a server-stream procedure and returns its events as they
// came, each with the time it came, and the stream's error at the end.
func (f *envdFixture) stream(ctx context.Context, procedure string, req any) ([]envdTimedEvent, error) {
	var evs []envdTimedEvent
	var err error
	switch r := req.(type) {
	case *startRequest:
		c := connect.NewClient[startRequest, startResponse](f.srv.Client(), f.srv.URL+procedure, connect.WithCodec(envdCodec{}))
		cr := connect.NewRequest(r)
		for k, v := range f.headers() {
			cr.Header()[k] = v
		}
		s, serr := c.CallServerStream(ctx, cr)
		if serr != nil {
			return nil, serr
		}
		for s.Receive() {
			evs = append(evs, envdTimedEvent{s.Msg().Event, time.Now()})
		}
		err = s.Err()
	case *connectRequest:
		c := connect.NewClient[connectRequest, connectResponse](f.srv.Client(), f.srv.URL+procedure, connect.WithCodec(envdCodec{}))
		cr := connect.NewRequest(r)
		for k, v := range f.headers() {
			cr.Header()[k] = v
		}
		s, serr := c.CallServerStream(ctx, cr)
		if serr != nil {
			return nil, serr
		}
		for s.Receive() {
			evs = append(evs, envdTimedEvent{s.Msg().Event, time.Now()})
		}
		err = s.Err()
	}
	return evs, err
}

// run runs a bash command through Start and returns its events.
func (f *envdFixture) run(ctx context.Context, cmd string, mod func(*startRequest)) ([]envdTimedEvent, error) {
	req := &startRequest{Process: &processConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", cmd}}}
	if mod != nil {
		mod(req)
	}
	return f.stream(ctx, "/process.Process/Start", req)
}

// envdOutcome is what a command's events say: its output and its end.
type envdOutcome struct {
	pid            uint32
	stdout, stderr string
	end            *endEvent
	keepalives     int
}

// envdOutcomeOf reads a command's events.
func envdOutcomeOf(t *testing.T, evs []envdTimedEvent) envdOutcome {
	t.Helper()
	var o envdOutcome
	for i, e := range evs {
		switch {
		case e.ev.Start != nil:
			if i != 0 {
				t.Errorf("start event at %d, want first", i)
			}
			o.pid = e.ev.Start.Pid
		case e.ev.Data != nil:
			o.stdout += string(e.ev.Data.Stdout)
			o.stderr += string(e.ev.Data.Stderr)
		case e.ev.End != nil:
			o.end = e.ev.End
		case e.ev.Keepalive != nil:
			o.keepalives++
		}
	}
	if len(evs) == 0 || evs[0].ev.Start == nil {
		t.Errorf("no start event first: %+v", evs)
	}
	return o
}

// waitListed waits until List shows n processes, failing the test after
// ten seconds.
func (f *envdFixture) waitListed(ctx context.Context, n int) {
	f.t.Helper()
	var l *processListResponse
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l, err = envdUnary[processListRequest, processListResponse](f, ctx, "/process.Process/List", &processListRequest{}); err == nil && len(l.Processes) == n {
			return
		}
	}
	f.t.Fatalf("List never showed %d processes: %+v, %v", n, l, err)
}
