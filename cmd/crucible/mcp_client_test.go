package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestMCPTypeScriptClient drives `crucible mcp` (stdio) and /mcp on
// `crucible serve` (streamable HTTP) with the official TypeScript SDK's
// client (tools/mcp-client/client.mjs): it lists the tools, runs
// print(6*7) and gets 42, gets a matplotlib chart back as a PNG image, and
// cancels a run that never ends by itself once its first line arrived as
// a progress notification; then nothing of that run is left on the host.
func TestMCPTypeScriptClient(t *testing.T) {
	testenv.Root(t)
	clientDir := testenv.NPMClients(t) // the client script and its pinned packages
	testenv.Image(t, "datascience")
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"stdio", func(t *testing.T) []string {
			return []string{"stdio", os.Args[0], "mcp", "--image", "datascience", "--db", filepath.Join(t.TempDir(), "runs.db")}
		}},
		{"streamable HTTP", func(t *testing.T) []string {
			_, base := startServe(t, "datascience", "{}")
			return []string{"http", base + "/mcp"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("node", append([]string{"client.mjs"}, tc.args(t)...)...)
			cmd.Dir = clientDir
			cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1", "MCP_CHART=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.Output()
			if err != nil {
				t.Fatalf("client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr.String())
			}
			steps := map[string]map[string]any{}
			for _, line := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
				var step map[string]any
				if err := json.Unmarshal([]byte(line), &step); err != nil {
					t.Fatalf("client line %q: %v", line, err)
				}
				steps[step["step"].(string)] = step
			}
			if names, _ := steps["tools"]["names"].([]any); !slices.Contains(names, any("run_code")) {
				t.Errorf("tools %v lack run_code", steps["tools"])
			}
			if got := steps["print"]["stdout"]; got != "42\n" {
				t.Errorf("print(6*7): stdout %q, want 42", got)
			}
			if images, _ := steps["chart"]["images"].([]any); !slices.Equal(images, []any{"image/png"}) {
				t.Errorf("chart: images %v, want one PNG", steps["chart"])
			}
			if steps["started"] == nil || steps["cancel"]["error"] == nil {
				t.Errorf("cancel: started %v, cancel %v: want the first line seen and the call cancelled", steps["started"], steps["cancel"])
			}
			// The run is killed as the server learns of the cancellation;
			// the bound only guards a hang.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
				left := processesNamed("mcpcancelmarker")
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("processes of the cancelled run left running: %v", left)
				}
			}
		})
	}
}

// processesNamed returns the pids whose command line starts with name.
func processesNamed(name string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), name+"\x00") {
			out = append(out, e.Name())
		}
	}
	return out
}
