package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox/sandboxtest"
)

// binDir holds the crucible binary built for this test run; TestMain
// creates and removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crucible-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// crucibleBinary builds ./cmd/crucible once per test run, with
// CGO_ENABLED=0, and returns the binary's path. It needs root.
func crucibleBinary(t testing.TB) string {
	t.Helper()
	testenv.Root(t)
	buildOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		goTool, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
		if err != nil {
			goTool = "/usr/local/go/bin/go"
		}
		out := filepath.Join(binDir, "crucible")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool, "build", "-o", out, "./cmd/crucible")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		start := time.Now()
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/crucible in %s: %v\n%s", root, err, b)
			return
		}
		t.Logf("built %s in %v", out, time.Since(start).Round(time.Millisecond))
		binPath = out
	})
	if buildErr != nil {
		t.Fatalf("building the crucible binary: %v", buildErr)
	}
	return binPath
}

// serveHasFlag reports whether `crucible serve` accepts --name (flags that
// other work may add, such as --max-concurrent).
func serveHasFlag(t testing.TB, name string) bool {
	t.Helper()
	out, _ := exec.Command(crucibleBinary(t), "serve", "--help").CombinedOutput()
	return regexp.MustCompile(`(?m)--` + regexp.QuoteMeta(name) + `\b`).Match(out)
}

// logBuffer collects a process's output; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail returns the last n lines.
func (b *logBuffer) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d earlier lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// server is a running `crucible serve` process.
type server struct {
	t    testing.TB
	name string // for messages, such as "server 1"
	// URL is the base URL, such as http://127.0.0.1:41234.
	URL string
	// Cmd is the process.
	Cmd *exec.Cmd
	// Client is an SDK client of URL.
	Client  *client.Client
	logs    *logBuffer
	exited  chan struct{} // closed once Cmd.Wait has returned
	waitErr error
}

// addrRE finds the listen address's port in the "serving" log line; the
// tests reach it on 127.0.0.1 whatever the address.
var addrRE = regexp.MustCompile(`\baddr=\S*:([0-9]+)`)

// startServer starts `crucible serve --addr 127.0.0.1:0 --db db --prestart 1
// extra...` (and a --socket of its own), waits until it logs its address and GET /healthz answers 200,
// and registers a cleanup that stops it (SIGTERM, then SIGKILL) and prints
// its log tail if t failed.
func startServer(t testing.TB, name, db string, extra ...string) *server {
	t.Helper()
	return startServerPlaced(t, name, db, append([]string{"--prestart", "1"}, extra...)...)
}

// startServerPlaced is startServer with only the flags that place the
// server (--addr, --db, --socket) before extra: with no extra, the server
// a user gets from a plain `crucible serve`.
func startServerPlaced(t testing.TB, name, db string, extra ...string) *server {
	t.Helper()
	bin := crucibleBinary(t)
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, extra...)
	if serveHasFlag(t, "socket") { // a socket of its own, never the host's
		args = append(args, "--socket", filepath.Join(t.TempDir(), "serve.sock"))
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// Should this test process die, the server dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s (%s %s): %v", name, bin, strings.Join(args, " "), err)
	}
	s := &server{t: t, name: name, Cmd: cmd, logs: logs, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("%s (pid %d) log tail:\n%s", s.name, cmd.Process.Pid, s.logs.Tail(60))
		}
	})

	deadline := time.Now().Add(60 * time.Second)
	for s.URL == "" {
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			s.URL = "http://127.0.0.1:" + m[1]
			break
		}
		select {
		case <-s.exited:
			t.Fatalf("%s exited before serving (%v); its output:\n%s", name, s.waitErr, logs.Tail(60))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s logged no addr=127.0.0.1:PORT line within 60s; its output:\n%s", name, logs.Tail(60))
		}
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := hc.Get(s.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: GET /healthz did not answer 200 within 60s (last: %v); its output:\n%s", name, statusOrErr(resp, err), logs.Tail(60))
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, err := client.New(s.URL, client.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}))
	if err != nil {
		t.Fatalf("client.New(%q): %v", s.URL, err)
	}
	s.Client = c
	t.Logf("%s: pid %d serving at %s", name, cmd.Process.Pid, s.URL)
	return s
}

func statusOrErr(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// PID returns the server's process id.
func (s *server) PID() int { return s.Cmd.Process.Pid }

// Logs returns everything the server wrote so far.
func (s *server) Logs() string { return s.logs.String() }

// Exited reports whether the process has ended.
func (s *server) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// Stop stops the server with SIGTERM, as an operator would, waits for it
// and fails the test unless it exits with status 0. A server still waiting
// for runs in progress after 15s (its grace period is longer) is killed.
// Stopping a stopped server does nothing.
func (s *server) Stop() {
	if s.Exited() {
		return
	}
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if s.waitErr != nil {
			s.t.Errorf("%s (pid %d) exited with %v after SIGTERM, want status 0", s.name, s.PID(), s.waitErr)
		}
		return
	case <-time.After(15 * time.Second):
	}
	s.t.Logf("%s (pid %d) still running 15s after SIGTERM: killing it", s.name, s.PID())
	_ = s.Cmd.Process.Kill()
	<-s.exited
}

// Kill9 kills the server with SIGKILL, leaving it no chance to clean up,
// and waits until it has been reaped.
func (s *server) Kill9() {
	s.t.Helper()
	if err := s.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatalf("kill -9 %s (pid %d): %v", s.name, s.PID(), err)
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.t.Fatalf("%s (pid %d) still not reaped 10s after SIGKILL", s.name, s.PID())
	}
}

// httpResult is a raw HTTP answer.
type httpResult struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a raw request to the server and reads the whole answer; t is
// the test (or subtest) that fails if the request cannot be made.
func (s *server) do(t *testing.T, method, path, contentType string, body io.Reader) httpResult {
	t.Helper()
	r, err := s.send(method, path, contentType, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send is do for goroutines other than the test's, which must not call
// t.Fatal: a request that cannot be made is an error.
func (s *server) send(method, path, contentType string, body io.Reader) (httpResult, error) {
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		return httpResult{}, fmt.Errorf("%s %s: %v", method, path, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return httpResult{}, fmt.Errorf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpResult{}, fmt.Errorf("%s %s: reading the answer: %v", method, path, err)
	}
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// wireError is the API's JSON error body.
type wireError struct {
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
		Rule    string `json:"rule"`
	} `json:"error"`
}

// checkAPIError checks that r is the JSON error {"error": {...}} with
// status, code and, if field is not empty, that field.
func checkAPIError(t *testing.T, what string, r httpResult, status int, code, field string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, want %d; body: %s", what, r.Status, status, clip(r.Body))
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json; body: %s", what, ct, clip(r.Body))
	}
	var e wireError
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Error == nil {
		t.Errorf("%s: body is not a JSON error {\"error\": {...}} (%v): %s", what, err, clip(r.Body))
		return
	}
	if e.Error.Code != code {
		t.Errorf("%s: error code %q, want %q (message %q)", what, e.Error.Code, code, e.Error.Message)
	}
	if e.Error.Message == "" {
		t.Errorf("%s: error has no message", what)
	}
	if field != "" && e.Error.Field != field {
		t.Errorf("%s: error field %q, want %q (message %q)", what, e.Error.Field, field, e.Error.Message)
	}
}

// checkSDKError checks that err is an *client.APIError with status, code
// and, if field is not empty, that field.
func checkSDKError(t *testing.T, what string, err error, status int, code, field string) {
	t.Helper()
	var ae *client.APIError
	if !errors.As(err, &ae) {
		t.Errorf("%s: error %v (%T), want an *client.APIError with status %d", what, err, err, status)
		return
	}
	if ae.Status != status || ae.Code != code || (field != "" && ae.Field != field) {
		t.Errorf("%s: got status %d code %q field %q (%s), want status %d code %q field %q",
			what, ae.Status, ae.Code, ae.Field, ae.Message, status, code, field)
	}
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// ---- processes, from /proc ----

// proc is one process as /proc/<pid>/stat shows it. PID and Start (the
// start time in clock ticks since boot) identify it even if the pid is
// reused later.
type proc struct {
	PID, PPID int
	State     byte
	Start     uint64
	Comm      string
}

func (p proc) String() string {
	return fmt.Sprintf("pid %d (%s) ppid %d state %c cmdline %q", p.PID, p.Comm, p.PPID, p.State, cmdline(p.PID))
}

// readProc reads /proc/pid/stat.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if lp < 0 || rp < lp {
		return proc{}, false
	}
	fields := strings.Fields(s[rp+1:]) // from field 3, state
	if len(fields) < 20 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	start, _ := strconv.ParseUint(fields[19], 10, 64) // field 22
	return proc{PID: pid, PPID: ppid, State: fields[0][0], Start: start, Comm: s[lp+1 : rp]}, true
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// allProcs returns every process of the host's PID namespace.
func allProcs() map[int]proc {
	entries, _ := os.ReadDir("/proc")
	procs := make(map[int]proc, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			procs[pid] = p
		}
	}
	return procs
}

// descendants returns the processes below root (not root itself), found by
// walking the ppid links of /proc/*/stat, ordered by pid.
func descendants(root int) []proc {
	children := map[int][]proc{}
	for _, p := range allProcs() {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c.PID)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// running reports whether p is still a live process: its pid exists with
// the same start time and it is not a zombie waiting to be reaped.
func running(p proc) bool {
	now, ok := readProc(p.PID)
	return ok && now.Start == p.Start && now.State != 'Z' && now.State != 'X'
}

// survivors returns those of ps still running.
func survivors(ps []proc) []proc {
	var out []proc
	for _, p := range ps {
		if running(p) {
			out = append(out, p)
		}
	}
	return out
}

// ---- cgroups and mounts ----

// The cgroup layout of sandbox/linux (cgroup.go, cgroup_v1.go): every run's
// cgroup is <root>/[<controller>/]crucible/<server pid>.<sequence>.
const (
	cgroupRoot   = "/sys/fs/cgroup"
	cgroupParent = "crucible"
)

// v1Controllers are the hierarchies sandbox/linux puts a run in on cgroup v1.
var v1Controllers = []string{"memory", "pids", "cpuacct", "freezer"}

// cgroupParents returns the existing directories that hold run cgroups:
// /sys/fs/cgroup/crucible on cgroup v2, /sys/fs/cgroup/<controller>/crucible
// for the v1 controllers.
func cgroupParents() []string {
	candidates := []string{filepath.Join(cgroupRoot, cgroupParent)}
	for _, c := range v1Controllers {
		candidates = append(candidates, filepath.Join(cgroupRoot, c, cgroupParent))
	}
	var out []string
	for _, d := range candidates {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// sandboxCgroups returns every run cgroup directory (named <pid>.<seq>)
// under the parents, sorted.
func sandboxCgroups() []string {
	var out []string
	for _, parent := range cgroupParents() {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			owner, _, ok := strings.Cut(e.Name(), ".")
			if _, err := strconv.Atoi(owner); ok && err == nil && e.IsDir() {
				out = append(out, filepath.Join(parent, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out
}

// cgroupsOwnedBy returns the run cgroups the server with pid created.
func cgroupsOwnedBy(pid int) []string {
	var out []string
	prefix := strconv.Itoa(pid) + "."
	for _, dir := range sandboxCgroups() {
		if strings.HasPrefix(filepath.Base(dir), prefix) {
			out = append(out, dir)
		}
	}
	return out
}

// mountinfo returns the lines of the host's /proc/self/mountinfo (this
// test process is in the host's mount namespace), without the mounts a
// container engine on the host makes for its containers
// (sandboxtest.EngineMount says which, and why that hides nothing of
// Crucible's).
func mountinfo(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatalf("read mountinfo: %v", err)
	}
	defer f.Close()
	lines := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !sandboxtest.EngineMount(sc.Text()) {
			lines[sc.Text()] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read mountinfo: %v", err)
	}
	return lines
}

// poll calls cond every 50ms until it returns true or timeout passes; it
// reports whether cond held.
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// configFlag writes config, a serve --config JSON object, to a file of
// its own and returns the flags that give it to startServer.
func configFlag(t *testing.T, config string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "serve.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", path}
}

// dial opens a raw TCP connection to the server, closed when t ends, for
// tests that write HTTP by hand.
func (s *server) dial(t *testing.T) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
