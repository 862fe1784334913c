package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/mcpserver"
)

// TestRunCodePolicy proves a model using the MCP tools sees the code
// policy's findings: in run_code's structured output and its text, and
// again in run_get's, read from the run's record.
func TestRunCodePolicy(t *testing.T) {
	svc := newService(t)
	cs, _ := connect(t, svc)
	var out mcpserver.RunOutput
	res := call(t, cs, "run_code", map[string]any{"code": "print('ran')\nimport socket", "policy": "block"}, &out)
	const finding = "line 2, col 1: blocked-import: module socket is blocked (strict), by import: import socket"
	if out.Status != "blocked" || out.Stdout != "" || len(out.Findings) != 1 || out.Findings[0].String() != finding {
		t.Fatalf("run_code: %+v", out)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "code policy: "+finding) {
		t.Errorf("text content lacks the finding:\n%s", text)
	}
	var again mcpserver.RunOutput
	call(t, cs, "run_get", map[string]any{"id": out.ID}, &again)
	if again.Status != "blocked" || len(again.Findings) != 1 || again.Findings[0].String() != finding {
		t.Errorf("run_get: %+v", again)
	}
}
