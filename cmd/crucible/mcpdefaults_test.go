package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestMCPDefaults: `crucible mcp` with no flag but --db, where the
// data-science image is built, offers it beside the host's directories:
// run_code runs in host, session_create opens in datascience; the log
// says which image serves what and that each keeps a zygote slot per
// CPU.
func TestMCPDefaults(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	cmd := exec.Command(os.Args[0], "mcp", "--db", filepath.Join(t.TempDir(), "runs.db"))
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	image := func(tool string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out struct {
			Image string `json:"image"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %s: %v", tool, b, err)
		}
		return out.Image
	}
	if got := image("run_code", map[string]any{"code": "print(1)"}); got != "host" {
		t.Errorf("run_code naming no image ran in %q, want host", got)
	}
	if got := image("session_create", map[string]any{}); got != "datascience" {
		t.Errorf("session_create naming no image opened in %q, want datascience", got)
	}
	want := "msg=images runs=host sessions_and_analyses=datascience offered=host,datascience warm_per_image=" + strconv.Itoa(min(runtime.NumCPU(), 8)) // one per CPU, at most 8
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, stderr.String())
	}
}
