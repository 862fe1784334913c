package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPOverHTTP: /mcp serves the MCP tools over streamable HTTP behind
// the API keys: without a key the client cannot connect; with one it runs
// code as its tenant, and another tenant cannot read that run.
func TestMCPOverHTTP(t *testing.T) {
	ts := newTestServer(t, nil)
	keyA, keyB := ts.newKey("a"), ts.newKey("b")
	ctx := context.Background()
	connect := func(key string) (*mcp.ClientSession, error) {
		tr := &mcp.StreamableClientTransport{Endpoint: ts.http.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{key}}, MaxRetries: -1}
		return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, nil)
	}
	if cs, err := connect(""); err == nil {
		cs.Close()
		t.Fatal("connected without an API key")
	}
	a, err := connect(keyA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := connect(keyB)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "print(6*7)"}})
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	id, _ := res.StructuredContent.(map[string]any)["id"].(string)
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "42\n") || id == "" {
		t.Fatalf("run_code: %q, id %q", text, id)
	}
	for _, tc := range []struct {
		name    string
		cs      *mcp.ClientSession
		isError bool
	}{
		{"its tenant reads the run", a, false},
		{"another tenant cannot", b, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_get", Arguments: map[string]any{"id": id}})
			if err != nil || res.IsError != tc.isError {
				t.Fatalf("run_get: %v, is error %v, want %v", err, res.IsError, tc.isError)
			}
		})
	}
}
