package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// The browser tests attack the server as a web page in the operator's
// browser would (browser.go): under a rebound DNS name (a foreign Host),
// cross-site (Origin, Sec-Fetch-Site), and with a body a page may post
// anywhere without a preflight (text/plain, a form). Each family of
// routes is tried, and nothing may have run: no run, record, session,
// cell, analysis or agent run. Same-origin and non-browser requests must
// still work. They need no root: the runtime is a fake that counts what
// it runs, the agents' model a scripted one.

const (
	jsonType    = "application/json"
	runBody     = `{"language":"python","code":"print(6*7)"}`
	agentBody   = `{"task":"what is 6 times 7?","text_mode":true}`
	analysis    = `{"datasets":[{"name":"a.csv","content":"a\n1\n"}]}`
	mcpInit     = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`
	noAnalysis  = "/v1/analyses/ana_0000000000000000"
	noAgentRun  = "/v1/agent-runs/agt_0000000000000000"
	approveBody = `{"approve":true}`
)

// guardReq is a request as a page, a browser or a client sends it.
type guardReq struct {
	family, method, path string
	contentType, body    string
	// host, when set, is sent as the Host header.
	host string
	// header holds more header fields.
	header map[string]string
}

func (q guardReq) String() string { return q.family + ": " + q.method + " " + q.path }

// with returns q with the header fields h added.
func (q guardReq) with(h map[string]string) guardReq {
	q.header = h
	return q
}

// send sends q.
func (ts *testServer) send(q guardReq) response {
	ts.Helper()
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	req, err := http.NewRequest(q.method, ts.http.URL+q.path, body)
	if err != nil {
		ts.Fatal(err)
	}
	if q.host != "" {
		req.Host = q.host
	}
	if q.contentType != "" {
		req.Header.Set("Content-Type", q.contentType)
	}
	req.Header.Set("Accept", "application/json, text/event-stream") // as MCP asks
	for k, v := range q.header {
		req.Header.Set(k, v)
	}
	if ts.key != "" {
		req.Header.Set("Authorization", "Bearer "+ts.key)
	}
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		ts.Fatalf("%s: %v", q, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.Fatal(err)
	}
	if acao := resp.Header.Get("Access-Control-Allow-Origin"); acao != "" {
		ts.Errorf("%s: Access-Control-Allow-Origin %q: no page of another origin may read an answer", q, acao)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// port is the test server's port.
func (ts *testServer) port() string {
	_, port, _ := strings.Cut(strings.TrimPrefix(ts.http.URL, "http://"), ":")
	return port
}

// newGuardServer starts a server on a counting fake runtime whose agents
// use a scripted model, so that every route family answers; adjust, if
// set, changes its config.
func newGuardServer(t *testing.T, adjust func(*config)) (*testServer, *imageRuntime) {
	t.Helper()
	model := llmtest.OpenAI(t, llmtest.Script{Key: providerKey, Codes: []string{"print(6*7)"}, Answer: "42"})
	m, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: model.URL + "/v1", APIKey: providerKey})
	if err != nil {
		t.Fatal(err)
	}
	rt := &imageRuntime{name: "default"}
	ts := newFakeServer(t, rt, func(c *config) {
		c.Agents.Model = m
		if adjust != nil {
			adjust(c)
		}
	})
	return ts, rt
}

// tally is what a server ran, as its runtime, store and registries saw it.
type tally struct{ runs, records, sessions, cells, agentRuns, analyses int }

// tally counts what ts ran for tenant.
func (ts *testServer) tally(rt *imageRuntime, tenant string) tally {
	ts.Helper()
	records, _, err := ts.store.List(context.Background(), tenant, store.Filter{})
	if err != nil {
		ts.Fatal(err)
	}
	agentRuns, _, err := ts.svc.AgentRuns(context.Background(), tenant, service.AgentRunPage{})
	if err != nil {
		ts.Fatal(err)
	}
	analyses, _, err := ts.svc.Analyses(context.Background(), tenant, store.MaxLimit, "")
	if err != nil {
		ts.Fatal(err)
	}
	return tally{runs: int(rt.runs.Load()), records: len(records), sessions: int(rt.sessions.Load()), cells: int(rt.execs.Load()),
		agentRuns: len(agentRuns), analyses: len(analyses)}
}

// refused checks that r is a 403 naming field.
func refused(t *testing.T, q guardReq, r response, field string) {
	t.Helper()
	if r.status != http.StatusForbidden {
		t.Errorf("%s: status %d, want 403; body %s", q, r.status, r.body)
		return
	}
	var e apiError
	r.json(t, &e)
	if e.Error.Code != "forbidden" || e.Error.Field != field || e.Error.Rule == "" {
		t.Errorf("%s: error %+v, want forbidden naming %s and its rule", q, e.Error, field)
	}
}

// everyRoute is a request of every route family, safe and unsafe ones.
var everyRoute = []guardReq{
	{family: "runs", method: "POST", path: "/v1/runs", contentType: jsonType, body: runBody},
	{family: "runs", method: "GET", path: "/v1/runs"},
	{family: "sessions", method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{}`},
	{family: "sessions", method: "GET", path: "/v1/sessions"},
	{family: "analyses", method: "POST", path: "/v1/analyses", contentType: jsonType, body: analysis},
	{family: "analyses", method: "GET", path: "/v1/analyses"},
	{family: "agent-runs", method: "POST", path: "/v1/agent-runs", contentType: jsonType, body: agentBody},
	{family: "agent-runs", method: "GET", path: "/v1/agent-runs"},
	{family: "images", method: "GET", path: "/v1/images"},
	{family: "healthz", method: "GET", path: "/healthz"},
	{family: "metrics", method: "GET", path: "/metrics"},
	{family: "openapi", method: "GET", path: "/openapi.json"},
	{family: "web UI", method: "GET", path: "/"},
	{family: "web UI", method: "GET", path: "/ui/app.js"},
	{family: "mcp", method: "POST", path: "/mcp", contentType: jsonType, body: mcpInit},
	{family: "no route", method: "GET", path: "/nowhere"},
}

// TestForeignHostRefused: DNS rebinding. A request that reached the
// server under a name other than its own is refused on every route, with
// keys as without (a valid key does not make a foreign Host good), and
// nothing ran; under a loopback name every route answers.
func TestForeignHostRefused(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		name := map[bool]string{false: "no keys", true: "a valid key"}[keyed]
		t.Run(name, func(t *testing.T) {
			ts, rt := newGuardServer(t, nil)
			tenant := server.DefaultTenant
			if keyed {
				tenant = "acme"
				ts = ts.as(ts.newKey(tenant))
			}
			port := ts.port()
			for _, host := range []string{"evil.test:" + port, "evil.test", "localhost.evil.test:" + port, "127.0.0.1.nip.io:" + port, "EVIL.test:" + port} {
				for _, q := range everyRoute {
					q.host = host
					refused(t, q, ts.send(q), "Host")
				}
			}
			if got := ts.tally(rt, tenant); got != (tally{}) {
				t.Errorf("after the refused requests: %+v ran, want nothing", got)
			}
			for _, host := range []string{"localhost:" + port, "LocalHost:" + port, "127.0.0.1:" + port, "127.9.8.7:" + port, "[::1]:" + port, "localhost"} {
				for _, q := range everyRoute {
					if q.method != "GET" {
						continue
					}
					q.host = host
					if r := ts.send(q); r.status == http.StatusForbidden || r.status >= 500 {
						t.Errorf("%s under Host %q: status %d; body %s", q, host, r.status, r.body)
					}
				}
			}
			q := guardReq{family: "runs", method: "POST", path: "/v1/runs", contentType: jsonType, body: runBody, host: "localhost:" + port}
			if r := ts.send(q); r.status != http.StatusOK {
				t.Errorf("%s under Host localhost: status %d; body %s", q, r.status, r.body)
			}
			if got := ts.tally(rt, tenant); got.runs != 1 || got.records != 1 {
				t.Errorf("after a run under a loopback name: %+v, want one run and its record", got)
			}
		})
	}
}

// crossSite are the header fields of a browser's cross-site request, and
// the field each refusal names.
var crossSite = []struct {
	name   string
	header map[string]string
	field  string
}{
	{"cross-site", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.test"}, "Sec-Fetch-Site"},
	{"same-site", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://ui.localhost"}, "Sec-Fetch-Site"},
	{"Origin alone", map[string]string{"Origin": "http://evil.test"}, "Origin"},
	{"Origin of another port", map[string]string{"Origin": "http://127.0.0.1:1"}, "Origin"},
	{"opaque Origin", map[string]string{"Origin": "null"}, "Origin"},
}

// TestCrossSiteRefused: a browser's cross-site request with an unsafe
// method is refused on every route family, whatever its body (a page can
// post text/plain and multipart ones without a preflight), and nothing
// ran; a safe method passes (the browser keeps the answer from the page:
// no CORS header is ever sent). Same-origin and non-browser requests run.
func TestCrossSiteRefused(t *testing.T) {
	ts, rt := newGuardServer(t, nil)
	var ses sessionInfo
	if r := ts.do("POST", "/v1/sessions", map[string]any{}); r.status != http.StatusCreated {
		t.Fatalf("POST /v1/sessions: %d %s", r.status, r.body)
	} else {
		r.json(t, &ses)
	}
	sesPath := "/v1/sessions/" + ses.ID
	upload, uploadType := form(t, [3]string{"datasets", "a.csv", "a\n1\n"})
	unsafe := []guardReq{
		{family: "runs", method: "POST", path: "/v1/runs", contentType: "text/plain", body: runBody},
		{family: "runs", method: "POST", path: "/v1/runs?stream=1", contentType: jsonType, body: runBody},
		{family: "sessions", method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{}`},
		{family: "sessions", method: "POST", path: sesPath + "/exec", contentType: "text/plain", body: `{"code":"1"}`},
		{family: "sessions", method: "PUT", path: sesPath + "/files/a.txt", contentType: "text/plain", body: "x"},
		{family: "sessions", method: "DELETE", path: sesPath},
		{family: "analyses", method: "POST", path: "/v1/analyses", contentType: uploadType, body: string(upload)},
		{family: "analyses", method: "POST", path: noAnalysis + "/questions", contentType: jsonType, body: `{"question":"why?"}`},
		{family: "analyses", method: "DELETE", path: noAnalysis},
		{family: "agent-runs", method: "POST", path: "/v1/agent-runs", contentType: "text/plain", body: agentBody},
		{family: "agent-runs", method: "POST", path: noAgentRun + "/approvals/apr_0", contentType: jsonType, body: approveBody},
		{family: "agent-runs", method: "DELETE", path: noAgentRun},
		{family: "mcp", method: "POST", path: "/mcp", contentType: jsonType, body: mcpInit},
		{family: "mcp", method: "DELETE", path: "/mcp"},
		{family: "no route", method: "POST", path: "/nowhere", contentType: "text/plain", body: "x"},
	}
	before := ts.tally(rt, server.DefaultTenant)
	for _, c := range crossSite {
		t.Run(c.name, func(t *testing.T) {
			for _, q := range unsafe {
				refused(t, q, ts.send(q.with(c.header)), c.field)
			}
			for _, q := range everyRoute {
				if q.method == "GET" {
					if r := ts.send(q.with(c.header)); r.status == http.StatusForbidden || r.status >= 500 {
						t.Errorf("%s: status %d; body %s", q, r.status, r.body)
					}
				}
			}
		})
	}
	if got := ts.tally(rt, server.DefaultTenant); got != before {
		t.Errorf("after the cross-site requests: %+v, want %+v as before", got, before)
	}
	if r := ts.do("GET", sesPath, nil); r.status != http.StatusOK {
		t.Errorf("the session after a cross-site DELETE: %d %s", r.status, r.body)
	}

	run := guardReq{family: "runs", method: "POST", path: "/v1/runs", contentType: jsonType, body: runBody}
	for name, h := range map[string]map[string]string{
		"same-origin":          {"Sec-Fetch-Site": "same-origin", "Origin": ts.http.URL},
		"same Origin":          {"Origin": ts.http.URL},
		"typed by the user":    {"Sec-Fetch-Site": "none"},
		"not from a browser":   nil,
		"same-origin, session": {"Sec-Fetch-Site": "same-origin", "Origin": ts.http.URL},
	} {
		q := run
		if strings.HasSuffix(name, "session") {
			q = guardReq{family: "sessions", method: "POST", path: sesPath + "/exec", contentType: jsonType, body: `{"code":"1"}`}
		}
		if r := ts.send(q.with(h)); r.status != http.StatusOK {
			t.Errorf("%s %s: status %d; body %s", name, q, r.status, r.body)
		}
	}
	after := ts.tally(rt, server.DefaultTenant)
	if after.runs != before.runs+4 || after.records != before.records+5 || after.cells != before.cells+1 {
		t.Errorf("after the same-origin and non-browser requests: %+v, want 4 more runs, one more cell and their 5 records than %+v", after, before)
	}
	q := guardReq{family: "analyses", method: "POST", path: "/v1/analyses", contentType: uploadType, body: string(upload),
		header: map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": ts.http.URL}}
	if r := ts.send(q); r.status == http.StatusForbidden || r.status == http.StatusUnsupportedMediaType || ts.tally(rt, server.DefaultTenant).sessions != after.sessions+1 {
		t.Errorf("a same-origin upload: status %d (body %s), want it to reach the service and open a session", r.status, r.body)
	}
}

// TestJSONContentType: a JSON body not sent as application/json is
// refused with 415 naming Content-Type, before anything runs, on every
// route that reads one; application/json with parameters, a body-less
// request without a type, and the session's file upload (raw bytes of
// any type) are served.
func TestJSONContentType(t *testing.T) {
	ts, rt := newGuardServer(t, nil)
	var ses sessionInfo
	ts.do("POST", "/v1/sessions", map[string]any{}).json(t, &ses)
	sesPath := "/v1/sessions/" + ses.ID
	routes := []guardReq{
		{family: "runs", method: "POST", path: "/v1/runs", body: runBody},
		{family: "runs", method: "POST", path: "/v1/runs?async=1", body: runBody},
		{family: "runs", method: "POST", path: "/v1/runs?stream=1", body: runBody},
		{family: "sessions", method: "POST", path: "/v1/sessions", body: `{}`},
		{family: "sessions", method: "POST", path: sesPath + "/exec", body: `{"code":"1"}`},
		{family: "sessions", method: "POST", path: sesPath + "/exec?stream=1", body: `{"code":"1"}`},
		{family: "analyses", method: "POST", path: "/v1/analyses", body: analysis},
		{family: "analyses", method: "POST", path: noAnalysis + "/questions", body: `{"question":"why?"}`},
		{family: "analyses", method: "POST", path: noAnalysis + "/questions/1/approvals/apr_0", body: approveBody},
		{family: "agent-runs", method: "POST", path: "/v1/agent-runs", body: agentBody},
		{family: "agent-runs", method: "POST", path: noAgentRun + "/approvals/apr_0", body: approveBody},
		{family: "mcp", method: "POST", path: "/mcp", body: mcpInit},
	}
	before := ts.tally(rt, server.DefaultTenant)
	for _, ct := range []string{"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "", "application/jsonx", "text/json", "multipart/form-data; boundary=x"} {
		t.Run("Content-Type "+ct, func(t *testing.T) {
			for _, q := range routes {
				if ct == "multipart/form-data; boundary=x" && q.path == "/v1/analyses" {
					continue // an upload's type: TestAnalysesBadInput
				}
				q.contentType = ct
				r := ts.send(q)
				if r.status != http.StatusUnsupportedMediaType {
					t.Errorf("%s as %q: status %d, want 415; body %s", q, ct, r.status, r.body)
					continue
				}
				e := r.wantError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
				if e.Error.Field != "Content-Type" || !strings.Contains(e.Error.Rule, "application/json") ||
					(q.path == "/v1/analyses") != strings.Contains(e.Error.Rule, "multipart/form-data") {
					t.Errorf("%s as %q: error %+v, want it to name Content-Type and the types it takes", q, ct, e.Error)
				}
			}
		})
	}
	if got := ts.tally(rt, server.DefaultTenant); got != before {
		t.Errorf("after the refused bodies: %+v, want %+v as before", got, before)
	}

	for _, q := range []guardReq{
		{family: "runs", method: "POST", path: "/v1/runs", contentType: "application/json; charset=utf-8", body: runBody},
		{family: "runs", method: "POST", path: "/v1/runs", contentType: "Application/JSON", body: runBody},
		{family: "sessions", method: "POST", path: "/v1/sessions"},
		{family: "sessions", method: "PUT", path: sesPath + "/files/a.csv", contentType: "text/csv", body: "a\n1\n"},
		{family: "sessions", method: "PUT", path: sesPath + "/files/b.bin", body: "\x00\x01"},
		{family: "mcp", method: "POST", path: "/mcp", contentType: jsonType, body: mcpInit},
	} {
		if r := ts.send(q); r.status/100 != 2 {
			t.Errorf("%s as %q: status %d; body %s", q, q.contentType, r.status, r.body)
		}
	}
	if got := ts.tally(rt, server.DefaultTenant); got.runs != before.runs+2 || got.sessions != before.sessions+1 {
		t.Errorf("after the accepted bodies: %+v, want 2 more runs and one more session than %+v", got, before)
	}
}

// TestUnixSocketHost: over a unix socket, which no browser can reach,
// the Host is not checked (the socket file's permissions are the gate);
// the cross-site check still holds.
func TestUnixSocketHost(t *testing.T) {
	ts, rt := newGuardServer(t, nil)
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: ts.srv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	post := func(h map[string]string) int {
		req, _ := http.NewRequest("POST", "http://evil.test/v1/runs", strings.NewReader(runBody))
		req.Header.Set("Content-Type", jsonType)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(nil); s != http.StatusOK || rt.runs.Load() != 1 {
		t.Errorf("a run over the socket under Host evil.test: status %d, %d runs; want 200 and one", s, rt.runs.Load())
	}
	if s := post(map[string]string{"Sec-Fetch-Site": "cross-site"}); s != http.StatusForbidden || rt.runs.Load() != 1 {
		t.Errorf("a cross-site run over the socket: status %d, %d runs; want 403 and still one", s, rt.runs.Load())
	}
}

// TestHostRule: which Host goes, by the address the connection arrived
// at and Config.AllowedHosts (the handler called as an http.Server would,
// with the local address in the context).
func TestHostRule(t *testing.T) {
	srv, _ := newServer(t, config{Config: service.Config{Runtime: &imageRuntime{name: "default"}}})
	allowing, _ := newServer(t, config{Config: service.Config{Runtime: &imageRuntime{name: "default"}},
		server: server.Config{AllowedHosts: []string{"Crucible.Example.com", "10.9.9.9", "2001:DB8::1"}}})
	lan := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8080}
	lo := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8080}
	for _, c := range []struct {
		srv   *server.Server
		local net.Addr // nil: not served by an http.Server
		host  string
		ok    bool
	}{
		{srv, lo, "localhost:8080", true},
		{srv, lo, "127.0.0.1", true},
		{srv, lo, "[::1]:8080", true},
		{srv, lo, "[::ffff:127.0.0.1]:8080", true},
		{srv, lo, "evil.test:8080", false},
		{srv, lo, "10.1.2.3:8080", false},
		{srv, lo, "crucible.example.com", false},
		{srv, lan, "10.1.2.3:8080", true}, // a server listening beyond loopback, by its address
		{srv, lan, "10.1.2.3", true},
		{srv, lan, "10.1.2.4:8080", false},
		{srv, lan, "evil.test:8080", false},
		{srv, lan, "localhost:8080", true},
		{srv, &net.TCPAddr{IP: net.IPv4zero}, "0.0.0.0", false},
		{srv, nil, "localhost", true},
		{srv, nil, "10.1.2.3", false},
		{srv, nil, "example.com", false},
		{allowing, lo, "crucible.example.com:443", true},
		{allowing, lo, "CRUCIBLE.example.COM", true},
		{allowing, lan, "crucible.example.com", true},
		{allowing, lo, "sub.crucible.example.com", false},
		{allowing, lo, "crucible.example.com.evil.test", false},
		{allowing, lo, "10.9.9.9:80", true},
		{allowing, lo, "[2001:db8::1]:80", true},
		{allowing, lo, "[2001:db8::2]:80", false},
	} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = c.host
		if c.local != nil {
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, c.local))
		}
		rec := httptest.NewRecorder()
		c.srv.Handler().ServeHTTP(rec, req)
		allowed := c.srv == allowing
		if got := rec.Code == http.StatusOK; got != c.ok {
			t.Errorf("Host %q at %v (allowed hosts: %v): status %d, want allowed %v; body %s", c.host, c.local, allowed, rec.Code, c.ok, rec.Body)
		}
	}
}

// TestAllowedHostsChecked: Config.AllowedHosts takes names and addresses
// only; New refuses anything else, naming the entry.
func TestAllowedHostsChecked(t *testing.T) {
	_, svc := newServer(t, config{Config: service.Config{Runtime: &imageRuntime{name: "default"}}})
	st := openStore(t)
	for _, bad := range []string{"", "*", "*.example.com", "example.com:8080", "http://example.com", "exa mple.com", "example..com", "-x.com", "[::1]", "example.com/"} {
		_, err := server.New(server.Config{Service: svc, Keys: st, AllowedHosts: []string{"ok.example.com", bad}})
		if err == nil || !strings.Contains(err.Error(), "AllowedHosts[1]") {
			t.Errorf("AllowedHosts %q: err %v, want a refusal naming AllowedHosts[1]", bad, err)
		}
	}
	for _, good := range []string{"localhost", "crucible.example.com", "CRUCIBLE-1.internal", "10.0.0.1", "::1", "fe80::1"} {
		if err := server.CheckAllowedHost(good); err != nil {
			t.Errorf("CheckAllowedHost(%q): %v", good, err)
		}
	}
}
