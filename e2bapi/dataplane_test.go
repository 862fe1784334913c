package e2bapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/e2bapi"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestDataPlaneAuth: a sandbox's envd and code interpreter answer only a
// request carrying its access token, in either header; one wrong token
// among those sent refuses it; a sandbox that does not run is a 502; a
// port that is not served a 501.
func TestDataPlaneAuth(t *testing.T) {
	ts := newTestServer(t, nil)
	key := ts.newKey("acme")
	c := ts.create(key, map[string]any{"templateID": "base"})
	other := ts.create(key, map[string]any{"templateID": "base"})
	id := c.SandboxID
	for _, tc := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"no token", []string{"E2b-Sandbox-Id", id, "E2b-Sandbox-Port", e2bapi.EnvdPort}, 401},
		{"wrong token", data(id, e2bapi.EnvdPort, strings.Repeat("0", 64)), 401},
		{"another sandbox's token", data(id, e2bapi.EnvdPort, other.EnvdAccessToken), 401},
		{"envd token", data(id, e2bapi.EnvdPort, c.EnvdAccessToken), 204},
		{"traffic token", []string{"E2b-Sandbox-Id", id, "E2b-Sandbox-Port", e2bapi.EnvdPort, "E2B-Traffic-Access-Token", c.TrafficAccessToken}, 204},
		{"one of two wrong", append(data(id, e2bapi.EnvdPort, c.EnvdAccessToken), "E2B-Traffic-Access-Token", "x"), 401},
		{"no port header", []string{"E2b-Sandbox-Id", id, "X-Access-Token", c.EnvdAccessToken}, 204},
		{"unknown sandbox", data("ses_000000000000000000000000", e2bapi.EnvdPort, c.EnvdAccessToken), 502},
		{"another port", data(id, "8080", c.EnvdAccessToken), 501},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do("GET", "/health", nil, tc.headers...)
			if tc.status == 204 {
				if r.status != 204 {
					t.Fatalf("status %d, want 204; %s", r.status, r.body)
				}
				return
			}
			r.wantError(t, tc.status)
		})
	}
	// The code interpreter's /contexts sends only the traffic token.
	r := ts.do("GET", "/contexts", nil, "E2b-Sandbox-Id", id, "E2b-Sandbox-Port", e2bapi.InterpreterPort, "E2B-Traffic-Access-Token", c.TrafficAccessToken)
	if r.status != 200 || !strings.Contains(string(r.body), `"id":"default"`) {
		t.Errorf("GET /contexts: %d %s", r.status, r.body)
	}
	ts.do("POST", "/execute", map[string]any{"code": "print(1)"}, "E2b-Sandbox-Id", id, "E2b-Sandbox-Port", e2bapi.InterpreterPort).wantError(t, 401)
	// The Connect services take the same tokens: a wrong one is
	// unauthenticated, the sandbox's own lists its commands (none).
	r = ts.do("POST", "/process.Process/List", map[string]any{}, data(id, e2bapi.EnvdPort, other.EnvdAccessToken)...)
	if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), `"code":"unauthenticated"`) {
		t.Errorf("Process/List with another sandbox's token: %d %s, want 401 unauthenticated", r.status, r.body)
	}
	r = ts.do("POST", "/process.Process/List", map[string]any{}, data(id, e2bapi.EnvdPort, c.EnvdAccessToken)...)
	if r.status != http.StatusOK {
		t.Errorf("Process/List with the sandbox's token: %d %s, want 200", r.status, r.body)
	}
}

// execute runs code in sandbox c and returns the messages of the answer,
// checking it is newline-delimited JSON ending in end_of_execution.
func execute(t *testing.T, ts *testServer, c created, body map[string]any) []map[string]any {
	t.Helper()
	r := ts.do("POST", "/execute", body, data(c.SandboxID, e2bapi.InterpreterPort, c.EnvdAccessToken)...)
	if r.status != 200 || r.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("POST /execute: %d %s", r.status, r.body)
	}
	var msgs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 || msgs[len(msgs)-1]["type"] != "end_of_execution" {
		t.Fatalf("the answer does not end with end_of_execution: %s", r.body)
	}
	return msgs
}

// ofType returns the messages of type typ.
func ofType(msgs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, m := range msgs {
		if m["type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

// TestExecuteLimits: a cell that reaches the server's wall-time limit
// ends its answer cleanly with a TimeoutError and end_of_execution, what
// it printed first included, and the session goes on; a cell that ends
// the interpreter ends the sandbox, which is then gone from the table.
func TestExecuteLimits(t *testing.T) {
	ts := newTestServer(t, func(c *service.Config) { c.Maxima = sandbox.Limits{WallTimeMS: 1500} })
	key := ts.newKey("acme")
	c := ts.create(key, map[string]any{"templateID": "code-interpreter-v1"})
	start := time.Now()
	msgs := execute(t, ts, c, map[string]any{"code": "print('before', flush=True)\nwhile True: pass"})
	errs := ofType(msgs, "error")
	if len(errs) != 1 || errs[0]["name"] != "TimeoutError" || !strings.Contains(errs[0]["value"].(string), "wall-time limit") ||
		len(ofType(msgs, "stdout")) != 1 || ofType(msgs, "stdout")[0]["text"] != "before\n" || time.Since(start) > 20*time.Second {
		t.Errorf("a cell past the wall-time limit: %v", msgs)
	}
	if msgs := execute(t, ts, c, map[string]any{"code": "21 * 2"}); len(ofType(msgs, "result")) != 1 || ofType(msgs, "result")[0]["text"] != "42" {
		t.Errorf("the next cell: %v", msgs)
	}
	msgs = execute(t, ts, c, map[string]any{"code": "import os\nos._exit(3)"})
	if errs := ofType(msgs, "error"); len(errs) != 1 {
		t.Errorf("a cell that ends the interpreter: %v", msgs)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ts.do("GET", "/sandboxes/"+c.SandboxID, nil, "X-API-Key", key).status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox whose interpreter exited is still listed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.do("POST", "/execute", map[string]any{"code": "1"}, data(c.SandboxID, e2bapi.InterpreterPort, c.EnvdAccessToken)...).wantError(t, http.StatusBadGateway)
}

// TestTenantShare: the number of a tenant's sandboxes is bounded by the
// service's session admission (429, which the SDKs raise as a rate
// limit); killing one makes room.
func TestTenantShare(t *testing.T) {
	ts := newTestServer(t, func(c *service.Config) { c.MaxSessions = 1 })
	key := ts.newKey("acme")
	a := ts.create(key, map[string]any{"templateID": "base"})
	ts.do("POST", "/sandboxes", map[string]any{"templateID": "base"}, "X-API-Key", key).wantError(t, http.StatusTooManyRequests)
	ts.do("DELETE", "/sandboxes/"+a.SandboxID, nil, "X-API-Key", key)
	// The killed sandbox's session is closed just after the answer.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := ts.do("POST", "/sandboxes", map[string]any{"templateID": "base"}, "X-API-Key", key)
		if r.status == http.StatusCreated {
			break
		}
		if r.status != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("a create after a kill: %d %s", r.status, r.body)
		}
	}
}

// TestKeys: while no key exists, any X-API-Key acts as the default tenant
// (E2B's SDKs insist on one); once one exists it must be valid; an e2b_
// key also works for the /v1 API.
func TestKeys(t *testing.T) {
	ts := newTestServer(t, nil)
	c := ts.create("e2b_anything", map[string]any{"templateID": "base"})
	if _, err := ts.svc.Session("default", c.SandboxID); err != nil {
		t.Errorf("with no keys, the sandbox is not the default tenant's: %v", err)
	}
	key := ts.newKey("acme")
	time.Sleep(5100 * time.Millisecond) // the server's key cache (keyCacheTTL) sees the new key
	ts.do("POST", "/sandboxes", map[string]any{"templateID": "base"}, "X-API-Key", "e2b_anything").wantError(t, http.StatusUnauthorized)
	req, _ := http.NewRequest("GET", ts.http.URL+"/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("an e2b_ key on /v1/sessions: %d", resp.StatusCode)
	}
}

// TestCellsRecorded: a sandbox's cells go through the service's pipeline:
// each is a run record of the sandbox's session, its output redacted,
// which Crucible's own API lists by the sandbox's ID with the same e2b_
// key.
func TestCellsRecorded(t *testing.T) {
	ts := newTestServer(t, nil)
	key := ts.newKey("acme")
	c := ts.create(key, map[string]any{"templateID": "base"})
	secret := "sk-" + strings.Repeat("a1B2", 12) // an OpenAI-style key, which redaction hides
	msgs := execute(t, ts, c, map[string]any{"code": "print('token " + secret + "')"})
	if out := ofType(msgs, "stdout"); len(out) != 1 || strings.Contains(out[0]["text"].(string), secret) {
		t.Errorf("the cell's stdout: %v; want it redacted", out)
	}
	req, _ := http.NewRequest("GET", ts.http.URL+"/v1/runs?session="+c.SandboxID, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Runs []struct {
			SessionID string `json:"session_id"`
			Status    string `json:"status"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/runs?session=: %d %v", resp.StatusCode, err)
	}
	if len(list.Runs) != 1 || list.Runs[0].SessionID != c.SandboxID || list.Runs[0].Status != "ok" {
		t.Errorf("the sandbox's records: %+v; want its one cell", list.Runs)
	}
}
