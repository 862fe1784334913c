package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
// print(6*7) and gets 42, sees a program that exits 3 and one that times
// out come back as error results (isError) that still hold the run, gets
// a matplotlib chart back as a PNG image, and
// cancels a run that never ends by itself once its first line arrived as
// a progress notification and the test saw its process on the host; then
// nothing of that run is left on the host.
func TestMCPTypeScriptClient(t *testing.T) {
	testenv.Root(t)
	clientDir := testenv.NPMClients(t) // the client script and its pinned packages
	testenv.Image(t, "datascience")
	for i, tc := range []struct {
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
			marker := fmt.Sprintf("mcpcancel%d%c", os.Getpid(), 'a'+i)
			cmd := exec.Command("node", append([]string{"client.mjs"}, tc.args(t)...)...)
			cmd.Dir = clientDir
			cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1", "MCP_CHART=1", "MCP_CANCEL_ON_STDIN=1", "MCP_CANCEL_MARKER="+marker)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			steps, marked, err := driveClient(t, cmd, marker)
			if err != nil {
				t.Fatalf("client: %v\nsteps: %v\nstderr:\n%s", err, steps, stderr.String())
			}
			if names, _ := steps["tools"]["names"].([]any); !slices.Contains(names, any("run_code")) {
				t.Errorf("tools %v lack run_code", steps["tools"])
			}
			if got := steps["print"]["stdout"]; got != "42\n" || steps["print"]["isError"] != false {
				t.Errorf("print(6*7): %v, want stdout 42 and no error result", steps["print"])
			}
			if s := steps["exit"]; s["isError"] != true || s["status"] != "error" || s["exit_code"] != 3.0 || s["stdout"] != "partial\n" {
				t.Errorf("sys.exit(3): %v, want an error result with status error, exit code 3 and the output", s)
			}
			if s := steps["timeout"]; s["isError"] != true || s["status"] != "timeout" {
				t.Errorf("a timeout: %v, want an error result with status timeout", s)
			}
			if images, _ := steps["chart"]["images"].([]any); !slices.Equal(images, []any{"image/png"}) {
				t.Errorf("chart: images %v, want one PNG", steps["chart"])
			}
			// The run started: its first line came as a progress
			// notification and its process was there on the host before
			// the client cancelled; the cancel ended the call.
			if steps["started"] == nil || len(marked) == 0 || steps["cancel"]["error"] == nil {
				t.Fatalf("cancel: started %v, the run's process on the host %v, cancel %v: want the first line seen, the process there, and the call cancelled",
					steps["started"], marked, steps["cancel"])
			}
			// The run is killed as the server learns of the cancellation;
			// the bound only guards a hang.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
				left := processesNamed(marker)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("processes of the cancelled run left running: %v (before the cancel: %v)", left, marked)
				}
			}
		})
	}
}

// driveClient runs the MCP client cmd (MCP_CANCEL_ON_STDIN=1) and returns
// its steps by name. Once the client says the cancellable run started, it
// waits (a minute at most) for that run's process, named marker, on the
// host, and returns its pids as marked (none if it never came) before it
// tells the client, on its stdin, to cancel.
func driveClient(t *testing.T, cmd *exec.Cmd, marker string) (steps map[string]map[string]any, marked []string, err error) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	defer stdin.Close()
	steps = map[string]map[string]any{}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		var step map[string]any
		if err := json.Unmarshal(lines.Bytes(), &step); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return steps, marked, fmt.Errorf("client line %q: %v", lines.Text(), err)
		}
		name, _ := step["step"].(string)
		steps[name] = step
		if name != "started" {
			continue
		}
		for deadline := time.Now().Add(time.Minute); len(marked) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			marked = processesNamed(marker)
		}
		if _, err := io.WriteString(stdin, "cancel\n"); err != nil {
			return steps, marked, err
		}
		stdin.Close()
	}
	return steps, marked, cmd.Wait()
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
