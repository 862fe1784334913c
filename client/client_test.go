package client_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// The end-to-end tests and the examples drive a real server (httptest
// around server.Handler) on the native runtime, which needs root, with a
// SQLite store in a temporary directory. Tests need root (testenv.Root).
// Examples cannot skip, and faking their output would test nothing, so
// TestMain leaves them out of the run (through -test.skip) when not root
// and says so; under CI, where the tests run as root, it refuses to.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Geteuid() != 0 {
		if testenv.CI() {
			fmt.Fprintln(os.Stderr, "client: the examples need root (the native sandbox), and CI is set, so they may not be left out: run the tests as root, as scripts/test.sh does")
			os.Exit(1)
		}
		skip := "^Example"
		if old := flag.Lookup("test.skip").Value.String(); old != "" {
			skip += "|" + old
		}
		if err := flag.Set("test.skip", skip); err != nil {
			fmt.Fprintln(os.Stderr, "set -test.skip:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "client: not root: the examples, which need the native sandbox, are not run")
	}
	os.Exit(m.Run())
}

var (
	runtimeOnce sync.Once
	sharedRT    *linux.Runtime
	runtimeErr  error
)

// startServer starts a server on the shared native runtime with a fresh
// SQLite store; adjust, if set, changes its Config. stop shuts it down and
// removes the store.
func startServer(adjust func(*service.Config)) (baseURL string, stop func(), err error) {
	runtimeOnce.Do(func() { sharedRT, runtimeErr = linux.New(linux.Options{}) })
	if runtimeErr != nil {
		return "", nil, runtimeErr
	}
	dir, err := os.MkdirTemp("", "crucible-client-")
	if err != nil {
		return "", nil, err
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "runs.db"))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		st.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := service.Config{Runtime: sharedRT, Store: st, Redactor: red, CacheTTL: 10 * time.Minute, Logger: quiet}
	if adjust != nil {
		adjust(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		st.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	srv, err := server.New(server.Config{Service: svc, Keys: st, Logger: quiet})
	if err != nil {
		st.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	hs := httptest.NewServer(srv.Handler())
	return hs.URL, func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
		st.Close()
		os.RemoveAll(dir)
	}, nil
}

// newClient starts a server for t (it needs root) and returns a client
// of it.
func newClient(t *testing.T, adjust func(*service.Config)) *client.Client {
	t.Helper()
	testenv.Root(t)
	u, stop, err := startServer(adjust)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(stop)
	c, err := client.New(u)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func py(code string) sandbox.Request { return sandbox.Request{Language: sandbox.Python, Code: code} }

func TestNewValidatesURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://host", "http://", "http://host/?q=1", "http://host/#f", "http://u:p@host", "http://[::1"} {
		if _, err := client.New(u); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
	if _, err := client.New("https://host/prefix/", client.WithHTTPClient(http.DefaultClient), client.WithAPIKey("k")); err != nil {
		t.Errorf("New: %v", err)
	}
	if _, err := client.New("http://host", client.WithHTTPClient(nil)); err == nil {
		t.Error("New with a nil *http.Client succeeded")
	}
}

func TestRun(t *testing.T) {
	c := newClient(t, nil)
	ctx := context.Background()
	res, err := c.CreateRun(ctx, py("print('hi')"), client.UseCache())
	if err != nil {
		t.Fatal(err)
	}
	if res.ID == "" || res.Status != sandbox.StatusOK || string(res.Stdout) != "hi\n" || res.CacheHit {
		t.Fatalf("CreateRun: %+v", res)
	}
	again, err := c.CreateRun(ctx, py("print('hi')"), client.UseCache())
	if err != nil || !again.CacheHit || again.ID == res.ID || string(again.Stdout) != "hi\n" {
		t.Fatalf("second CreateRun: %+v, %v; want a cache hit", again, err)
	}
	fresh, err := c.CreateRun(ctx, py("print('hi')"))
	if err != nil || fresh.CacheHit || fresh.Status != sandbox.StatusOK {
		t.Fatalf("CreateRun without UseCache: %+v, %v", fresh, err)
	}
	// Run, the sandbox.Runtime call, never answers from the cache.
	plain, err := c.Run(ctx, py("print('hi')"))
	if err != nil || plain.Status != sandbox.StatusOK || string(plain.Stdout) != "hi\n" {
		t.Fatalf("Run: %+v, %v", plain, err)
	}
	if n := cacheHits(t, c); n != 1 {
		t.Errorf("%d cache hits after CreateRun(UseCache) twice, CreateRun, Run; want 1", n)
	}

	failed, err := c.CreateRun(ctx, py("1/0"))
	if err != nil {
		t.Fatal(err)
	}
	if failed.Status != sandbox.StatusError || failed.Error == nil || failed.Error.Type != "ZeroDivisionError" {
		t.Fatalf("failing Run: %+v", failed)
	}
}

// cacheHits counts the records of c's server that are cache hits.
func cacheHits(t *testing.T, c *client.Client) int {
	t.Helper()
	runs, _, err := c.ListRuns(context.Background(), client.ListOptions{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		if r.CacheHit {
			n++
		}
	}
	return n
}

func TestRunInvalid(t *testing.T) {
	c := newClient(t, nil)
	ctx := context.Background()
	cobol := sandbox.Request{Language: "cobol", Code: "x"}
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"CreateRun", func() error { _, err := c.CreateRun(ctx, cobol); return err }},
		{"CreateRun streamed", func() error {
			req := cobol
			req.OnOutput = func(sandbox.Stream, []byte) {}
			_, err := c.CreateRun(ctx, req)
			return err
		}},
		{"RunAsync", func() error { _, err := c.RunAsync(ctx, cobol); return err }},
		{"Run", func() error {
			res, err := c.Run(ctx, cobol)
			if res.Status != "" {
				t.Errorf("Run of an invalid request: status %q, want a zero Result", res.Status)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			var e *client.APIError
			if !errors.As(err, &e) {
				t.Fatalf("err %v (%T), want *APIError", err, err)
			}
			if e.Status != http.StatusBadRequest || e.Code != "invalid_request" || e.Field != "language" || e.Rule == "" || e.Message == "" {
				t.Fatalf("APIError %+v", e)
			}
			if !strings.Contains(e.Error(), "language") {
				t.Errorf("Error() %q does not name the field", e.Error())
			}
			var ie *sandbox.InputError
			if !sandbox.IsInputError(err) || !errors.As(err, &ie) || ie.Field != "language" || ie.Rule != e.Rule {
				t.Errorf("err %v: want a *sandbox.InputError with field language and rule %q, got %+v", err, e.Rule, ie)
			}
			var pe *sandbox.PlatformError
			if client.IsNotFound(err) || client.IsTooManyRequests(err) || errors.As(err, &pe) {
				t.Errorf("a 400 classified as 404, 429 or a platform failure: %v", err)
			}
		})
	}
}

func TestAsyncAndWait(t *testing.T) {
	c := newClient(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := c.RunAsync(ctx, py("import time\ntime.sleep(0.3)\nprint('later')"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.WaitRun(ctx, id, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != id || run.Status != sandbox.StatusOK || string(run.Stdout) != "later\n" || run.FinishedAt == nil {
		t.Fatalf("WaitRun: %+v", run)
	}

	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	slow, err := c.RunAsync(ctx, py("import time\ntime.sleep(0.6)"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitRun(short, slow, 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitRun past its context: %v", err)
	}
}

func TestListRuns(t *testing.T) {
	c := newClient(t, nil)
	ctx := context.Background()
	start := time.Now().Add(-time.Second)
	for i := range 3 {
		if _, err := c.CreateRun(ctx, py(fmt.Sprintf("print(%d)", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateRun(ctx, sandbox.Request{Language: sandbox.Bash, Code: "echo hi"}); err != nil {
		t.Fatal(err)
	}

	var seen []api.Run
	opts := client.ListOptions{Language: "python", Status: "ok", Since: start, Limit: 2}
	for page := 0; ; page++ {
		runs, next, err := c.ListRuns(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > 2 || page > 2 {
			t.Fatalf("page %d holds %d runs", page, len(runs))
		}
		seen = append(seen, runs...)
		if next == "" {
			break
		}
		opts.Cursor = next
	}
	if len(seen) != 3 {
		t.Fatalf("listed %d python runs, want 3", len(seen))
	}
	for i, r := range seen {
		if r.Language != sandbox.Python || string(r.Stdout) != fmt.Sprintf("%d\n", 2-i) {
			t.Errorf("run %d: %s %q, want newest first", i, r.Language, r.Stdout)
		}
	}

	all, next, err := c.ListRuns(ctx, client.ListOptions{})
	if err != nil || len(all) != 4 || next != "" {
		t.Fatalf("ListRuns: %d runs, next %q, %v", len(all), next, err)
	}
	if _, _, err := c.ListRuns(ctx, client.ListOptions{Cursor: "bogus"}); !hasField(err, "cursor") {
		t.Fatalf("bad cursor: %v", err)
	}
}

func hasField(err error, field string) bool {
	var e *client.APIError
	return errors.As(err, &e) && e.Status == http.StatusBadRequest && e.Field == field
}

func TestGetRun(t *testing.T) {
	c := newClient(t, nil)
	ctx := context.Background()
	res, err := c.CreateRun(ctx, py("print('x')"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.GetRun(ctx, res.ID)
	if err != nil || run.ID != res.ID || run.Code != "print('x')" || run.Status != sandbox.StatusOK {
		t.Fatalf("GetRun: %+v, %v", run, err)
	}
	_, err = c.GetRun(ctx, "no/such run")
	if !client.IsNotFound(err) || client.IsTooManyRequests(err) {
		t.Fatalf("GetRun of an unknown id: %v", err)
	}
	if e := (*client.APIError)(nil); !errors.As(err, &e) || e.Code != "not_found" {
		t.Errorf("GetRun of an unknown id: %v, want code not_found", err)
	}
}

func TestSession(t *testing.T) {
	c := newClient(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Bash}); !hasField(err, "language") {
		t.Fatalf("bash session: %v", err)
	}
	s, err := c.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python,
		Files: []sandbox.File{{Name: "in.txt", Content: sandbox.Data("seed")}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID() == "" {
		t.Fatal("session without an ID")
	}
	if res, err := s.Exec(ctx, sandbox.Cell{Code: "x = 41"}); err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("Exec: %+v, %v", res, err)
	}
	res, err := s.Exec(ctx, sandbox.Cell{Code: "x + 1"})
	if err != nil || res.Value != "42" {
		t.Fatalf("Exec: %+v, %v", res, err)
	}

	// A name that needs escaping, in a subdirectory.
	const name = "dir/a b%#?.txt"
	if err := s.WriteFile(ctx, name, []byte("content\x00\xff")); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadFile(ctx, name)
	if err != nil || string(got) != "content\x00\xff" {
		t.Fatalf("ReadFile: %q, %v", got, err)
	}
	res, err = s.Exec(ctx, sandbox.Cell{Code: "open('dir/a b%#?.txt','rb').read()[:7] + open('in.txt','rb').read()"})
	if err != nil || res.Value != "b'contentseed'" {
		t.Fatalf("Exec reading the file: %+v, %v", res, err)
	}
	files, err := s.ListFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int64{}
	for _, f := range files {
		names[f.Name] = f.Size
	}
	if names[name] != 9 || names["in.txt"] != 4 {
		t.Fatalf("ListFiles: %+v", files)
	}
	if _, err := s.ReadFile(ctx, "missing.txt"); !client.IsNotFound(err) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v, want IsNotFound and fs.ErrNotExist", err)
	}

	// A handle on the same session by its ID sees the same interpreter.
	again := c.AttachSession(s.ID())
	if res, err := again.Exec(ctx, sandbox.Cell{Code: "x * 2"}); err != nil || res.Value != "82" {
		t.Fatalf("Exec through AttachSession: %+v, %v", res, err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Exec", func() error { _, err := s.Exec(ctx, sandbox.Cell{Code: "x"}); return err }},
		{"Exec through the other handle", func() error { _, err := again.Exec(ctx, sandbox.Cell{Code: "x"}); return err }},
		{"ListFiles", func() error { _, err := s.ListFiles(ctx); return err }},
		{"WriteFile", func() error { return s.WriteFile(ctx, "a.txt", nil) }},
		{"Close", func() error { return again.Close() }},
	} {
		err := tc.call()
		var e *client.APIError
		if !errors.As(err, &e) || e.Status != http.StatusGone || e.Code != "session_closed" || !errors.Is(err, sandbox.ErrSessionClosed) {
			t.Errorf("%s after Close: %v, want a 410 session_closed matching sandbox.ErrSessionClosed", tc.name, err)
		}
	}
	if _, err := c.AttachSession("no-such-session").Exec(ctx, sandbox.Cell{Code: "1"}); !client.IsNotFound(err) {
		t.Errorf("Exec in an unknown session: %v, want IsNotFound", err)
	}
}

func TestTooManyRequests(t *testing.T) {
	c := newClient(t, func(cfg *service.Config) { cfg.MaxConcurrent, cfg.MaxQueue = 1, 1 })
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.CreateRun(context.Background(), py("import time\ntime.sleep(1)"))
		}()
	}
	wg.Wait()
	var ok, refused int
	for _, err := range errs {
		var e *client.APIError
		switch {
		case err == nil:
			ok++
		case client.IsTooManyRequests(err) && errors.As(err, &e):
			refused++
			if e.Code != "too_many_requests" || e.RetryAfter != time.Second {
				t.Errorf("429: %+v", e)
			}
		default:
			t.Errorf("CreateRun: %v", err)
		}
	}
	if ok < 1 || ok > 2 || refused < 1 {
		t.Fatalf("%d runs, %d refused: want 1-2 runs and the rest refused", ok, refused)
	}
}

// TestNonJSONError needs no root: a fake server answers like a proxy.
func TestNonJSONError(t *testing.T) {
	long := strings.Repeat("x", 2000)
	var gotAuth string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/base/v1/runs/empty":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/base/v1/runs/long":
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, long)
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>502 Bad Gateway</html>\n")
		}
	}))
	defer hs.Close()
	c, err := client.New(hs.URL+"/base/", client.WithAPIKey("secret"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err = c.GetRun(ctx, "r1")
	var e *client.APIError
	if !errors.As(err, &e) {
		t.Fatalf("err %v (%T), want *APIError", err, err)
	}
	if e.Status != http.StatusBadGateway || e.Code != "" || e.Message != "<html>502 Bad Gateway</html>" || e.RetryAfter != 0 {
		t.Fatalf("APIError %+v", e)
	}
	if gotAuth != "Bearer secret" {
		t.Errorf("Authorization %q", gotAuth)
	}
	if want := "crucible: 502: <html>502 Bad Gateway</html>"; e.Error() != want {
		t.Errorf("Error() %q, want %q", e.Error(), want)
	}

	_, err = c.GetRun(ctx, "long")
	if !errors.As(err, &e) || e.Status != http.StatusBadGateway || len(e.Message) > 600 || !strings.HasPrefix(e.Message, "xxx") {
		t.Fatalf("long body: %v", err)
	}
	_, err = c.GetRun(ctx, "empty")
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.Message != "Service Unavailable" || e.RetryAfter != 3*time.Second {
		t.Fatalf("empty body: %+v", e)
	}
}
