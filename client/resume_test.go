package client_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// These tests need no root: the real server runs a scripted runtime, and a
// proxy in front of it cuts the client's connection mid-run.

// gatedRuntime writes "one\n" to stdout, waits until gate is closed, then
// writes "two\n" to stdout and "warn\n" to stderr. It has no sessions.
type gatedRuntime struct{ gate chan struct{} }

func (g *gatedRuntime) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	res := sandbox.Result{Status: sandbox.StatusOK, Language: req.Language, Limits: req.Limits.WithDefaults()}
	write := func(s sandbox.Stream, text string) {
		if req.OnOutput != nil {
			req.OnOutput(s, []byte(text))
		}
		if s == sandbox.StreamStdout {
			res.Stdout = append(res.Stdout, text...)
		} else {
			res.Stderr = append(res.Stderr, text...)
		}
	}
	write(sandbox.StreamStdout, "one\n")
	select {
	case <-g.gate:
	case <-ctx.Done():
		res.Status, res.ExitCode = sandbox.StatusKilled, -1
		return res, nil
	}
	write(sandbox.StreamStdout, "two\n")
	write(sandbox.StreamStderr, "warn\n")
	return res, nil
}

func (*gatedRuntime) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	return nil, sandbox.ErrSessionClosed
}

// serveOn starts a server on rt and st, shut down when t ends.
func serveOn(t *testing.T, rt service.Runtime, st store.Store) (*service.Service, *httptest.Server) {
	t.Helper()
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := service.New(service.Config{Runtime: rt, Store: st, Redactor: red, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Service: svc, Keys: st, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		_ = svc.Shutdown(context.Background())
	})
	return svc, hs
}

// cutAfterStdout passes an event stream on until the end of its first
// stdout event, then fails, as a dropped connection does.
type cutAfterStdout struct {
	body io.ReadCloser
	seen []byte
	cut  bool
}

func (c *cutAfterStdout) Read(p []byte) (int, error) {
	if c.cut {
		return 0, io.ErrUnexpectedEOF
	}
	n, err := c.body.Read(p)
	c.seen = append(c.seen, p[:n]...)
	if i := bytes.Index(c.seen, []byte("event: stdout")); i >= 0 {
		if j := bytes.Index(c.seen[i:], []byte("\n\n")); j >= 0 {
			k := n - (len(c.seen) - (i + j + 2)) // the end of the event, in p
			c.cut = true
			return k, nil
		}
	}
	return n, err
}

func (c *cutAfterStdout) Close() error { return c.body.Close() }

// cuttingProxy is a reverse proxy to first whose first answer is cut after
// its first stdout event. Every later request is passed to resume (which
// may block, or answer itself and return false) and then, if it returned
// true, to next.
type cuttingProxy struct {
	first, next *url.URL
	resume      func(n int, r *http.Request, w http.ResponseWriter) bool
	requests    atomic.Int32
	lastIDs     sync.Map // request number -> Last-Event-ID
}

func (p *cuttingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(p.requests.Add(1))
	p.lastIDs.Store(n, r.Header.Get("Last-Event-ID"))
	target := p.first
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, ErrorLog: log.New(io.Discard, "", 0)}
	if n == 1 {
		rp.ModifyResponse = func(resp *http.Response) error {
			resp.Body = &cutAfterStdout{body: resp.Body}
			return nil
		}
	} else {
		if !p.resume(n, r, w) {
			return
		}
		target = p.next
	}
	rp.ServeHTTP(w, r)
}

// followThroughProxy starts a run on a server behind a cutting proxy and
// follows it through the proxy; resume, given the gate, the server's
// service and its store, handles the requests after the first.
func followThroughProxy(t *testing.T, resume func(p *cuttingProxy, gate func(), svc *service.Service, st store.Store) func(int, *http.Request, http.ResponseWriter) bool) (*cuttingProxy, string, string, error) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt := &gatedRuntime{gate: make(chan struct{})}
	open := sync.OnceFunc(func() { close(rt.gate) })
	svc, hs := serveOn(t, rt, st)
	t.Cleanup(open) // before the server's shutdown
	u, _ := url.Parse(hs.URL)
	p := &cuttingProxy{first: u, next: u}
	p.resume = resume(p, open, svc, st)
	ps := httptest.NewServer(p)
	t.Cleanup(ps.Close)

	direct, err := client.New(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := direct.RunAsync(ctx, py("x"))
	if err != nil {
		t.Fatal(err)
	}
	proxied, err := client.New(ps.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out, errOut strings.Builder
	res, err := proxied.FollowRun(ctx, id, func(s sandbox.Stream, b []byte) {
		mu.Lock()
		defer mu.Unlock()
		if s == sandbox.StreamStdout {
			out.Write(b)
		} else {
			errOut.Write(b)
		}
	})
	if err == nil && (string(res.Stdout) != "one\ntwo\n" || string(res.Stderr) != "warn\n") {
		t.Errorf("result stdout %q, stderr %q", res.Stdout, res.Stderr)
	}
	return p, out.String(), errOut.String(), err
}

// TestFollowRunResumes: a connection cut mid-run is resumed with
// Last-Event-ID, and the caller gets every byte of output once.
func TestFollowRunResumes(t *testing.T) {
	p, out, errOut, err := followThroughProxy(t, func(_ *cuttingProxy, gate func(), _ *service.Service, _ store.Store) func(int, *http.Request, http.ResponseWriter) bool {
		return func(int, *http.Request, http.ResponseWriter) bool { gate(); return true }
	})
	if err != nil {
		t.Fatalf("FollowRun: %v", err)
	}
	if out != "one\ntwo\n" || errOut != "warn\n" {
		t.Errorf("output: stdout %q, stderr %q; want \"one\\ntwo\\n\" and \"warn\\n\" once", out, errOut)
	}
	if n := p.requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if id, _ := p.lastIDs.Load(2); id != "5" {
		t.Errorf("the resumed request's Last-Event-ID is %q, want 5 (the stdout event's)", id)
	}
}

// TestFollowRunResumesAfterEnd: resumed after the run ended, on a server
// without its feed (another one on the same store), the server answers
// with the result only; the client passes on the output it had not seen,
// and only that.
func TestFollowRunResumesAfterEnd(t *testing.T) {
	_, out, errOut, err := followThroughProxy(t, func(p *cuttingProxy, gate func(), svc *service.Service, st store.Store) func(int, *http.Request, http.ResponseWriter) bool {
		return func(_ int, r *http.Request, _ http.ResponseWriter) bool {
			gate()
			id := strings.Split(r.URL.Path, "/")[3]
			for {
				rec, err := svc.Get(r.Context(), server.DefaultTenant, id)
				if err != nil {
					t.Error(err)
					return false
				}
				if rec.FinishedAt != nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if p.next == p.first {
				_, hs := serveOn(t, &gatedRuntime{}, st)
				p.next, _ = url.Parse(hs.URL)
			}
			return true
		}
	})
	if err != nil {
		t.Fatalf("FollowRun: %v", err)
	}
	if out != "one\ntwo\n" || errOut != "warn\n" {
		t.Errorf("output: stdout %q, stderr %q; want \"one\\ntwo\\n\" and \"warn\\n\" once", out, errOut)
	}
}

// TestFollowRunGivesUp: when every resumption fails, FollowRun stops after
// a bounded number and returns the error.
func TestFollowRunGivesUp(t *testing.T) {
	p, out, _, err := followThroughProxy(t, func(*cuttingProxy, func(), *service.Service, store.Store) func(int, *http.Request, http.ResponseWriter) bool {
		return func(_ int, _ *http.Request, w http.ResponseWriter) bool {
			conn, _, herr := http.NewResponseController(w).Hijack()
			if herr == nil {
				conn.Close()
			}
			return false
		}
	})
	if err == nil {
		t.Fatal("FollowRun succeeded through a proxy that drops every connection")
	}
	if out != "one\n" {
		t.Errorf("stdout %q, want the part before the cut", out)
	}
	if n := p.requests.Load(); n != 4 {
		t.Errorf("%d requests, want 4 (the first and 3 resumptions)", n)
	}
}
