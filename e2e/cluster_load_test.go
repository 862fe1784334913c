package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// clusterRequest is one HTTP request of a cluster's client load and what
// it got.
type clusterRequest struct {
	Op, Tenant, Node string // the operation ("run", "async", "session ..."), its tenant, the node asked
	Start, End       time.Time
	Status           int    // HTTP status; 0 when no answer came
	Code, Message    string // the JSON error's, for a non-2xx answer
	Err              error  // the transport's error when no answer came
	Body             []byte
}

// clusterRun is a run the load sent: Token is in its code, so that its
// records are found in the store whatever their ids.
type clusterRun struct {
	Token, Tenant, Node string
	Async               bool
	ID                  string // the id the node answered, "" if none
	Status              string // the status a synchronous run was answered with
}

// clusterLoad drives a client load of mixed runs (answered at once and
// asynchronous) and sessions (created on one node, cells through the
// others, deleted) over the nodes of a cluster, for two tenants, and
// records every request and run.
type clusterLoad struct {
	urls    map[string]string // node id -> base URL
	order   []string          // node ids
	keys    map[string]string // tenant -> secret
	tenants []string
	hc      *http.Client

	mu       sync.Mutex
	requests []clusterRequest
	runs     []clusterRun
}

// clientTimeout bounds every request of the load: no answer within it is
// a hang.
const clientTimeout = 30 * time.Second

func newClusterLoad(urls map[string]string, order []string, keys map[string]string) *clusterLoad {
	l := &clusterLoad{urls: urls, order: order, keys: keys, hc: &http.Client{Timeout: clientTimeout}}
	for t := range keys {
		l.tenants = append(l.tenants, t)
	}
	return l
}

// Run starts workers goroutines that loop over the operations until ctx
// ends, and returns a function that waits for them.
func (l *clusterLoad) Run(ctx context.Context, workers int) (wait func()) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			tenant := l.tenants[w%len(l.tenants)]
			for i := 0; ctx.Err() == nil; i++ {
				node := l.order[(w+i)%len(l.order)]
				switch i % 3 {
				case 0:
					l.run(tenant, node, false)
				case 1:
					l.run(tenant, node, true)
				default:
					l.session(tenant, node, l.order[(w+i+1)%len(l.order)], l.order[(w+i+2)%len(l.order)])
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	return wg.Wait
}

// send makes one request of tenant to node and records it.
func (l *clusterLoad) send(op, tenant, node, method, path, body string) clusterRequest {
	r := call(l.hc, l.urls[node], l.keys[tenant], method, path, body)
	r.Op, r.Tenant, r.Node = op, tenant, node
	l.mu.Lock()
	l.requests = append(l.requests, r)
	l.mu.Unlock()
	return r
}

// call makes one request with key through hc and returns what it got.
func call(hc *http.Client, url, key, method, path, body string) clusterRequest {
	r := clusterRequest{Start: time.Now()}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url+path, rd)
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		var resp *http.Response
		if resp, err = hc.Do(req); err == nil {
			r.Status = resp.StatusCode
			r.Body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
	}
	r.End, r.Err = time.Now(), err
	if err != nil {
		r.Status = 0
	} else if r.Status >= 300 {
		var e wireError
		if json.Unmarshal(r.Body, &e) == nil && e.Error != nil {
			r.Code, r.Message = e.Error.Code, e.Error.Message
		}
	}
	return r
}

// nodeHTTP is an HTTP client of the host's namespace, bounded as the
// load's.
func nodeHTTP() *http.Client { return &http.Client{Timeout: clientTimeout} }

// sessionCreate asks url for a Python session.
func sessionCreate(hc *http.Client, url, key string) clusterRequest {
	return call(hc, url, key, "POST", "/v1/sessions", `{"language":"python"}`)
}

// sessionExec runs code in session id through url.
func sessionExec(hc *http.Client, url, key, id, code string) clusterRequest {
	return call(hc, url, key, "POST", "/v1/sessions/"+id+"/exec", fmt.Sprintf(`{"code":%q}`, code))
}

// sessionDelete deletes the session whose creation answered created.
func sessionDelete(url, key string, created []byte) {
	var s struct{ ID string }
	if json.Unmarshal(created, &s) == nil && s.ID != "" {
		call(nodeHTTP(), url, key, "DELETE", "/v1/sessions/"+s.ID, "")
	}
}

// sessionOpen opens a session on url and returns its id.
func sessionOpen(t *testing.T, url, key string) string {
	t.Helper()
	r := sessionCreate(nodeHTTP(), url, key)
	var s struct{ ID string }
	if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &s) != nil || s.ID == "" {
		t.Fatalf("open a session on %s: %d %s (%v)", url, r.Status, clip(r.Body), r.Err)
	}
	return s.ID
}

// nodeRun is a run's answer as the load reads it.
type nodeRun struct{ ID, Status, Stdout string }

// nodeClientRun runs a Python program on url and returns its answer.
func nodeClientRun(tb testing.TB, url, key, code string) nodeRun {
	tb.Helper()
	r := call(nodeHTTP(), url, key, "POST", "/v1/runs", fmt.Sprintf(`{"language":"python","code":%q}`, code))
	var res nodeRun
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &res) != nil {
		tb.Fatalf("a run on %s: %d %s (%v)", url, r.Status, clip(r.Body), r.Err)
	}
	return res
}

// execOut runs a program and returns its standard output.
func execOut(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).Output()
	return string(out), err
}

// run posts a one-line Python program carrying a token of its own,
// answered at once or (async) accepted and polled.
func (l *clusterLoad) run(tenant, node string, async bool) {
	run := clusterRun{Token: newToken(), Tenant: tenant, Node: node, Async: async}
	body := fmt.Sprintf(`{"language":"python","code":"print('%s')"}`, run.Token)
	path, op := "/v1/runs", "run"
	if async {
		path, op = "/v1/runs?async=1", "async"
	}
	r := l.send(op, tenant, node, "POST", path, body)
	var res struct{ ID, Status string }
	if r.Status/100 == 2 && json.Unmarshal(r.Body, &res) == nil {
		run.ID = res.ID
		if !async {
			run.Status = res.Status
		}
	}
	l.mu.Lock()
	l.runs = append(l.runs, run)
	l.mu.Unlock()
}

// session opens a session on node, runs two cells through the two others
// (forwarded to it) and deletes it through node; the cells stop at the
// first answer that is not a success.
func (l *clusterLoad) session(tenant, node, via1, via2 string) {
	r := l.send("session create", tenant, node, "POST", "/v1/sessions", `{"language":"python"}`)
	var s struct{ ID string }
	if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &s) != nil || s.ID == "" {
		return
	}
	defer l.send("session delete", tenant, node, "DELETE", "/v1/sessions/"+s.ID, "")
	for _, c := range []struct{ via, code string }{{via1, "x = 20"}, {via2, "x * 2 + 2"}} {
		r := l.send("session exec", tenant, c.via, "POST", "/v1/sessions/"+s.ID+"/exec", fmt.Sprintf(`{"code":%q}`, c.code))
		if r.Status != http.StatusOK {
			return
		}
	}
}

// Requests returns what the load recorded so far.
func (l *clusterLoad) Requests() []clusterRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]clusterRequest(nil), l.requests...)
}

// Runs returns the runs the load sent so far.
func (l *clusterLoad) Runs() []clusterRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]clusterRun(nil), l.runs...)
}

// newToken returns a random token a run prints, to find it in the store.
func newToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "tok" + hex.EncodeToString(b)
}

// nsHTTPClient is an HTTP client whose connections are made inside the
// network namespace ns, as a client on that node's own machine: it reaches
// the node while the node's link is down. Each connection's socket is
// created by a goroutine locked to a thread that enters ns and, once the
// socket exists, returns to the test's namespace before it is unlocked.
// The thread must not end: a node started by this process (Pdeathsig)
// is killed when the thread that forked it ends, and a locked goroutine
// that exits ends its thread. Only if the way back fails does the thread
// end, locked.
func nsHTTPClient(ns string) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		type dialed struct {
			c   net.Conn
			err error
		}
		ch := make(chan dialed, 1)
		go func() {
			runtime.LockOSThread()
			home, err := os.Open("/proc/thread-self/ns/net")
			if err != nil {
				runtime.UnlockOSThread()
				ch <- dialed{nil, err}
				return
			}
			defer home.Close()
			f, err := os.Open("/run/netns/" + ns)
			if err == nil {
				err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
				f.Close()
			}
			var c net.Conn
			if err == nil {
				c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			} else {
				err = fmt.Errorf("enter network namespace %s: %w", ns, err)
			}
			if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread()
			}
			ch <- dialed{c, err}
		}()
		d := <-ch
		return d.c, d.err
	}
	return &http.Client{Timeout: clientTimeout, Transport: &http.Transport{Proxy: nil, DialContext: dial, DisableKeepAlives: true}}
}

// errTimeout reports whether err is a client timeout.
func errTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
