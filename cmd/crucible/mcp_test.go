package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestMCPStdio drives `crucible mcp` over stdio with the Go SDK's client:
// the tools are listed, run_code answers print(6*7) with 42, and 1/0 with
// an error result (isError) holding the exception.
func TestMCPStdio(t *testing.T) {
	testenv.Root(t)
	cmd := exec.Command(os.Args[0], "mcp", "--db", filepath.Join(t.TempDir(), "runs.db"))
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
	}
	for _, tc := range []struct {
		name, code, want string
		failed           bool
	}{
		{"python", "print(6*7)", "42\n", false},
		{"an error", "1/0", "ZeroDivisionError", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": tc.code}})
			if err != nil {
				t.Fatal(err)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; res.IsError != tc.failed || !strings.Contains(text, tc.want) {
				t.Fatalf("run_code %q: %q (is error %v), want %q (is error %v)", tc.code, text, res.IsError, tc.want, tc.failed)
			}
		})
	}
}
