package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// forwardingNode is a node with an HTTP server in front of it: Forward
// first, then a handler that says which node served the request, what it
// received, and streams two lines with a pause between them.
type forwardingNode struct {
	node *Node
	srv  *httptest.Server
}

func startForwardingNode(t *testing.T, url, id string) *forwardingNode {
	t.Helper()
	fn := &forwardingNode{}
	var fw *Forwarder
	fn.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant := r.Header.Get("X-Test-Tenant") // the test's stand-in for authentication
		if fw.Forward(w, r, tenant) {
			return
		}
		if strings.HasPrefix(r.URL.Path, "/e2b/") && fw.ForwardSandbox(w, r, r.Header.Get("E2b-Sandbox-Id")) {
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Served-By", id)
		fmt.Fprintf(w, "served by %s: %s %s?%s auth=%q fwd=%q origin=%q body=%q\n", id, r.Method, r.URL.Path, r.URL.RawQuery,
			r.Header.Get("Authorization"), r.Header.Get(ForwardedBy), r.Header.Get("Origin"), body)
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("stream") != "" {
			time.Sleep(2 * time.Second)
			fmt.Fprintln(w, "second line")
		}
	}))
	t.Cleanup(fn.srv.Close)
	fn.node, _ = testNode(t, url, id, fn.srv.URL)
	fw = fn.node.Forwarder()
	return fn
}

// TestForward: through node B, a request for a session node A holds is
// served by A as it was sent (method, path, query, body, Authorization),
// marked forwarded by B, streamed as it comes; everything else is served
// by B itself; a session of a node that is down answers 410 "gone".
func TestForward(t *testing.T) {
	url := startNATS(t).url()
	a := startForwardingNode(t, url, "node-a")
	b := startForwardingNode(t, url, "node-b")
	ctx := context.Background()
	if err := a.node.Opened(ctx, "ses_a", "acme"); err != nil {
		t.Fatal(err)
	}
	if err := b.node.Opened(ctx, "ses_b", "acme"); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, method, path, tenant, body string
		header                           map[string]string
		want                             string
	}{
		{"exec forwarded to the owner", "POST", "/v1/sessions/ses_a/exec?x=1", "acme", `{"code":"1"}`,
			map[string]string{"Authorization": "Bearer crk_k", "Origin": "http://node-b"},
			`served by node-a: POST /v1/sessions/ses_a/exec?x=1 auth="Bearer crk_k" fwd="node-b" origin="" body="{\"code\":\"1\"}"`},
		{"a file path under the session", "GET", "/v1/sessions/ses_a/files/d/x.csv", "acme", "", nil,
			`served by node-a: GET /v1/sessions/ses_a/files/d/x.csv? auth="" fwd="node-b"`},
		{"the session itself", "DELETE", "/v1/sessions/ses_a", "acme", "", nil, `served by node-a: DELETE /v1/sessions/ses_a?`},
		{"its own session, served here", "GET", "/v1/sessions/ses_b", "acme", "", nil, `served by node-b: GET /v1/sessions/ses_b? auth="" fwd=""`},
		{"another tenant's: not forwarded, not told", "GET", "/v1/sessions/ses_a", "other", "", nil, `served by node-b: GET /v1/sessions/ses_a?`},
		{"unknown: served here (404 there)", "GET", "/v1/sessions/ses_none/files", "acme", "", nil, `served by node-b: GET /v1/sessions/ses_none/files?`},
		{"already forwarded: never again", "GET", "/v1/sessions/ses_a", "acme", "", map[string]string{ForwardedBy: "node-c"},
			`served by node-b: GET /v1/sessions/ses_a? auth="" fwd="node-c"`},
		{"an id NATS cannot hold: served here (404 there)", "GET", "/v1/sessions/a*b%3E/files", "acme", "", nil, `served by node-b: GET /v1/sessions/a*b>/files?`},
		{"not a session", "POST", "/v1/sessions", "acme", "", nil, `served by node-b: POST /v1/sessions?`},
		{"runs are not forwarded", "POST", "/v1/runs", "acme", "", nil, `served by node-b: POST /v1/runs?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, b.srv.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("X-Test-Tenant", tc.tenant)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(string(got), tc.want) {
				t.Errorf("%d %s\nwant 200 %s", resp.StatusCode, got, tc.want)
			}
		})
	}

	t.Run("streams as it comes", func(t *testing.T) {
		req, _ := http.NewRequest("GET", b.srv.URL+"/v1/sessions/ses_a/exec?stream=1", nil)
		req.Header.Set("X-Test-Tenant", "acme")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "served by node-a") {
			t.Fatalf("first line %q, %v", line, err)
		}
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("the first line arrived after %v: held back until the owner's answer ended (2 s)", d)
		}
	})

	t.Run("gone once its node is down", func(t *testing.T) {
		crash(a.node)
		a.srv.Close()
		var resp *http.Response
		var body []byte
		waitFor(t, testTTL+5*time.Second, "a 410 for the session of the node that died", func() bool {
			req, _ := http.NewRequest("POST", b.srv.URL+"/v1/sessions/ses_a/exec", strings.NewReader("{}"))
			req.Header.Set("X-Test-Tenant", "acme")
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(r.Body)
			r.Body.Close()
			resp = r
			if r.StatusCode == http.StatusServiceUnavailable { // died moments ago: retry
				return false
			}
			return true
		})
		var e api.ErrorBody
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != http.StatusGone || e.Error.Code != api.CodeSessionClosed ||
			e.Error.Message != "gone: session ses_a was on node node-a, which is down" {
			t.Errorf("%d %s; want 410 session_closed gone", resp.StatusCode, body)
		}
		// Another tenant learns nothing of it.
		req, _ := http.NewRequest("GET", b.srv.URL+"/v1/sessions/ses_a", nil)
		req.Header.Set("X-Test-Tenant", "other")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if !strings.HasPrefix(string(got), "served by node-b") {
			t.Errorf("another tenant's request for the gone session: %d %s", r.StatusCode, got)
		}
	})
}
