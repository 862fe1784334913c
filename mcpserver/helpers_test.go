package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/mcpserver"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// The tests drive the server with the Go SDK's client over an in-memory
// transport, on a real service: the native sandbox (root), a SQLite
// store, and the datascience image when it is built.

// newService returns a service on the native runtime with the
// datascience image when there is one; the tenant is "t". Each of
// configure changes the service's configuration first.
func newService(t *testing.T, configure ...func(*service.Config)) *service.Service {
	t.Helper()
	testenv.Root(t)
	rt, err := linux.New(linux.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := service.Config{Runtime: rt, Store: st, Redactor: red, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if img, err := image.Open(image.DefaultStore, "datascience"); err == nil {
		ds, err := linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ds.Close() })
		cfg.Images = []service.Image{{Name: "datascience", Digest: img.Digest, Runtime: ds}}
	}
	for _, c := range configure {
		c(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
	})
	return svc
}

// progressLog collects the progress messages a client receives.
type progressLog struct {
	mu   sync.Mutex
	msgs []string
	seen chan string // each message, also sent here when not full
}

func (p *progressLog) handle(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.msgs = append(p.msgs, r.Params.Message)
	p.mu.Unlock()
	select {
	case p.seen <- r.Params.Message:
	default:
	}
}

func (p *progressLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.msgs...)
}

// connect serves svc's MCP server as tenant "t" and returns a client
// session on it, with the progress notifications it receives.
func connect(t *testing.T, svc *service.Service) (*mcp.ClientSession, *progressLog) {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(svc, "t", "test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	prog := &progressLog{seen: make(chan string, 16)}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: prog.handle})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, prog
}

// call calls tool with args and decodes its structured content, if it has
// any (an error result of a program that failed does), into out (if not
// nil).
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if out != nil && res.StructuredContent != nil {
		decode(t, res, out)
	}
	return res
}

// decode decodes res's structured content into out.
func decode(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// errorText returns the text of an error result, "" for a success.
func errorText(res *mcp.CallToolResult) string {
	if !res.IsError || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// jsonOf returns v as JSON.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
