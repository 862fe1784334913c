package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

func TestRouteOf(t *testing.T) {
	for _, tc := range []struct {
		method, path, mcpID string
		wantID              string
		wantKind            kind
	}{
		{"GET", "/v1/sessions/ses_1/files/a/b", "", "ses_1", kindSession},
		{"GET", "/v1/analyses/ana_1", "", "ana_1", kindAnalysis},
		{"POST", "/v1/analyses/ana_1/questions/2/approvals/apr_1", "", "ana_1", kindAnalysis},
		{"GET", "/v1/agent-runs/agt_1/events", "", "agt_1", kindAgentRun},
		{"POST", "/mcp", "mcp_1", "mcp_1", kindMCP},
		{"POST", "/mcp", "", "", 0},                      // initialize: a new session, here
		{"GET", "/v1/analyses", "", "", 0},               // lists: from the shared store
		{"GET", "/v1/agent-runs", "", "", 0},             //
		{"POST", "/v1/runs", "", "", 0},                  // runs: not by id
		{"GET", "/v1/sessionsX/ses_1", "", "", 0},        // not the prefix
		{"GET", "/v1/runs/ses_1", "mcp_1", "", 0},        // the header only on /mcp
		{"GET", "/v1/agent-runs/", "", "", kindAgentRun}, // no id: served here
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.mcpID != "" {
			r.Header.Set(MCPSessionHeader, tc.mcpID)
		}
		id, k := routeOf(r)
		if id != tc.wantID || (id != "" && k != tc.wantKind) {
			t.Errorf("%s %s (mcp %q): %q %v, want %q %v", tc.method, tc.path, tc.mcpID, id, k, tc.wantID, tc.wantKind)
		}
	}
}

// ask sends a request of tenant acme through fn and returns its status
// and body.
func ask(t *testing.T, fn *forwardingNode, method, path string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, fn.srv.URL+path, strings.NewReader("{}"))
	req.Header.Set("X-Test-Tenant", "acme")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestForwardKinds: analyses, agent runs, MCP sessions and E2B sandboxes
// that node A holds are served by A through B; once A is down, what
// each becomes: an analysis is taken over by the node asked (its entry
// moved, by one node of two asked at once), an agent run, an MCP
// session and a sandbox are left to the node asked (the store, or 404),
// a session answers 410.
func TestForwardKinds(t *testing.T) {
	url := startDebianNATS(t)
	a := startForwardingNode(t, url, "node-a")
	b := startForwardingNode(t, url, "node-b")
	c := startForwardingNode(t, url, "node-c")
	ctx := context.Background()
	for _, id := range []string{"ana_1", "ana_2", "agt_1", "mcp_1", "ses_sbx"} {
		if err := a.node.Opened(ctx, id, "acme"); err != nil {
			t.Fatal(err)
		}
	}
	alive := []struct {
		name, method, path string
		header             map[string]string
	}{
		{"an analysis's question", "POST", "/v1/analyses/ana_1/questions", nil},
		{"an agent run's events", "GET", "/v1/agent-runs/agt_1/events?after=3", map[string]string{"Last-Event-ID": "3"}},
		{"an agent run's approval", "POST", "/v1/agent-runs/agt_1/approvals/apr_1", nil},
		{"an MCP session", "POST", "/mcp", map[string]string{MCPSessionHeader: "mcp_1"}},
		{"an E2B sandbox's data plane", "POST", "/e2b/execute", map[string]string{"E2b-Sandbox-Id": "ses_sbx", "X-Test-Tenant": "nobody"}},
	}
	for _, tc := range alive {
		t.Run("alive: "+tc.name, func(t *testing.T) {
			status, body := ask(t, b, tc.method, tc.path, tc.header)
			if status != 200 || !strings.HasPrefix(body, "served by node-a") || !strings.Contains(body, `fwd="node-b"`) {
				t.Errorf("%d %s; want it served by node-a, forwarded by node-b", status, body)
			}
		})
	}

	crash(a.node)
	a.srv.Close()
	waitFor(t, testTTL+5*time.Second, "node-a down", func() bool {
		ok, err := b.node.NodeAlive(ctx, "node-a")
		return err == nil && !ok
	})
	for _, tc := range alive {
		t.Run("down: "+tc.name, func(t *testing.T) {
			status, body := ask(t, b, tc.method, tc.path, tc.header)
			if status != 200 || !strings.HasPrefix(body, "served by node-b") {
				t.Errorf("%d %s; want it served by node-b, the node asked", status, body)
			}
		})
	}
	t.Run("down: the analysis's entry moved to the node asked", func(t *testing.T) {
		node, ok, err := c.node.Owner(ctx, "ana_1")
		if err != nil || !ok || node.ID != "node-b" {
			t.Fatalf("owner of ana_1: %+v %v %v, want node-b alive", node, ok, err)
		}
		// Asked through C now, it goes to B, which holds it.
		if status, body := ask(t, c, "GET", "/v1/analyses/ana_1", nil); !strings.HasPrefix(body, "served by node-b") {
			t.Errorf("through node-c: %d %s, want it forwarded to node-b", status, body)
		}
	})
	t.Run("down: two nodes asked at once, one takes it", func(t *testing.T) {
		var wg sync.WaitGroup
		served := make([]string, 2)
		for i, fn := range []*forwardingNode{b, c} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, body := ask(t, fn, "GET", "/v1/analyses/ana_2", nil)
				served[i], _, _ = strings.Cut(body, ":")
			}()
		}
		wg.Wait()
		node, _, err := b.node.Owner(ctx, "ana_2")
		if err != nil || served[0] != served[1] || served[0] != "served by "+node.ID {
			t.Errorf("served %q, owner %s (%v): want both served by the one owner", served, node.ID, err)
		}
	})
	t.Run("down: a session is gone", func(t *testing.T) {
		status, body := ask(t, c, "GET", "/v1/analyses/none", nil)
		if !strings.HasPrefix(body, "served by node-c") {
			t.Errorf("an unknown analysis: %d %s, want it served by the node asked", status, body)
		}
		status, body = ask(t, b, "GET", "/v1/sessions/ses_sbx", nil)
		var e api.ErrorBody
		if json.Unmarshal([]byte(body), &e) != nil || status != http.StatusGone {
			t.Errorf("a session of the dead node: %d %s, want 410", status, body)
		}
	})
}

// TestListSessions: GET /v1/sessions through any node lists the asking
// key's sessions of every live node, each node asked with the request's
// Authorization and marked forwarded.
func TestListSessions(t *testing.T) {
	url := startNATS(t).url()
	var fws []*Forwarder
	var srvs []*httptest.Server
	for i, id := range []string{"node-a", "node-b"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fws[i].Forward(w, r, "acme") {
				return
			}
			if r.Header.Get(ForwardedBy) == "" || r.Header.Get("Authorization") != "Bearer crk_k" {
				http.Error(w, "not as forwarded", http.StatusBadRequest)
				return
			}
			_ = json.NewEncoder(w).Encode(api.SessionList{Sessions: []api.SessionInfo{{ID: "ses_of_" + id}}})
		}))
		t.Cleanup(srv.Close)
		srvs = append(srvs, srv)
		n, _ := testNode(t, url, id, srv.URL)
		fws = append(fws, n.Forwarder())
	}
	for _, srv := range srvs {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/sessions", nil)
		req.Header.Set("Authorization", "Bearer crk_k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var list api.SessionList
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		got := fmt.Sprint(len(list.Sessions))
		for _, s := range list.Sessions {
			got += " " + s.ID
		}
		if err != nil || resp.StatusCode != 200 || !strings.Contains(got, "ses_of_node-a") || !strings.Contains(got, "ses_of_node-b") {
			t.Errorf("%d %s (%v); want the sessions of both nodes", resp.StatusCode, got, err)
		}
	}
}

// TestGiveUpTaken: a node that the others took for down (cut off) and
// whose analysis another node took over meanwhile forgets it once it
// reaches NATS again, and forwards its requests to the new owner; what
// no one took it keeps.
func TestGiveUpTaken(t *testing.T) {
	url := startNATS(t).url()
	a := startForwardingNode(t, url, "node-a")
	b := startForwardingNode(t, url, "node-b")
	ctx := context.Background()
	for _, id := range []string{"ana_p", "ana_kept"} {
		if err := a.node.Opened(ctx, id, "acme"); err != nil {
			t.Fatal(err)
		}
	}
	// As when node-a's heartbeats did not get through for the TTL: the
	// others took it for down, and node-b took its analysis over.
	a.node.mu.Lock()
	a.node.cutOff = true
	a.node.mu.Unlock()
	if taken, err := b.node.takeOver(ctx, "ana_p", owner{Node: "node-a", Tenant: "acme"}); err != nil || !taken {
		t.Fatalf("take over: %v %v", taken, err)
	}
	if err := a.node.beat(ctx); err != nil { // back
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "node-a forgets the analysis node-b took", func() bool { return !a.node.holds("ana_p") })
	if !a.node.holds("ana_kept") {
		t.Error("node-a forgot an analysis no one took")
	}
	if status, body := ask(t, a, "GET", "/v1/analyses/ana_p", nil); !strings.HasPrefix(body, "served by node-b") {
		t.Errorf("through node-a once back: %d %s; want it forwarded to node-b, its owner now", status, body)
	}
}
