package server_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/server"
)

// mcpRecorder records the MCP sessions put on the catalog's record.
type mcpRecorder struct {
	mu            sync.Mutex
	opened, ended []string
}

func (m *mcpRecorder) Opened(_ context.Context, id, tenant string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opened = append(m.opened, tenant+"/"+id)
	return nil
}

func (m *mcpRecorder) Ended(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended = append(m.ended, id)
}

func (m *mcpRecorder) lists() ([]string, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.opened), slices.Clone(m.ended)
}

// TestMCPCatalog: in cluster mode an MCP session's id (Mcp-Session-Id)
// is put on record as its tenant's before the client learns it, and
// taken off once the client closes the session.
//
// The SDK also makes a session for a request that fails to initialize
// (the client's probe of a newer protocol), and closes it at once: its
// id, recorded, is taken off once the window for initialization passed.
func TestMCPCatalog(t *testing.T) {
	defer server.SetMCPInitWindow(300 * time.Millisecond)()
	rec := &mcpRecorder{}
	ts := newTestServer(t, func(c *config) { c.server.MCPSessions = rec })
	key := ts.newKey("acme")
	ctx := context.Background()
	tr := &mcp.StreamableClientTransport{Endpoint: ts.http.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{key}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	id := cs.ID()
	if opened, _ := rec.lists(); !strings.HasPrefix(id, "mcp_") || !slices.Contains(opened, "acme/"+id) {
		t.Fatalf("session %q: recorded %v, want acme/%s among them", id, opened, id)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		opened, ended := rec.lists()
		if len(ended) == len(opened) && slices.Contains(ended, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the client closed session %s: recorded %v, ended %v; want every one taken off the record", id, opened, ended)
		}
	}
}
