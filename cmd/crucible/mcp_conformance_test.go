package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestMCPConformance runs the protocol's own conformance runner
// (@modelcontextprotocol/conformance, pinned in tools/mcp-client) against
// both transports: /mcp on `crucible serve` (streamable HTTP) and `crucible
// mcp` (stdio). The runner only speaks HTTP, so over stdio it reaches
// `crucible mcp` through supergateway, a stdio-to-streamable-HTTP bridge
// (pinned too): the protocol's messages pass through to our stdio
// unchanged. Each transport's baseline (tools/mcp-client/conformance-*.yml)
// lists the scenarios that test features Crucible does not have, each with
// its reason; the runner fails on any other failure, and on a listed
// scenario that passes.
func TestMCPConformance(t *testing.T) {
	testenv.Root(t)
	clientDir := testenv.NPMClients(t)
	runner := filepath.Join(clientDir, "node_modules", ".bin", "conformance")
	for _, tc := range []struct {
		name, baseline string
		url            func(t *testing.T) string
	}{
		{"streamable HTTP", "conformance-http.yml", func(t *testing.T) string {
			_, base := startServe(t, "host", "{}")
			return base + "/mcp"
		}},
		{"stdio", "conformance-stdio.yml", func(t *testing.T) string {
			return startStdioBridge(t, os.Args[0]+" mcp --image host --db "+filepath.Join(t.TempDir(), "runs.db"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url(t)
			cmd := exec.Command(runner, "server", "--url", url, "--expected-failures", tc.baseline)
			cmd.Dir = clientDir
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance runner against %s: %v\n%s", url, err, out)
			}
			if !bytes.Contains(out, []byte("Baseline check passed")) {
				t.Fatalf("conformance runner against %s did not check the baseline:\n%s", url, out)
			}
			t.Logf("conformance runner against %s:\n%s", url, runnerSummary(out))
		})
	}
}

// startStdioBridge serves the stdio MCP server command over streamable
// HTTP with supergateway, and returns its URL once it accepts connections.
// The bridge and the server it starts are killed, as a process group, when
// the test ends.
func startStdioBridge(t *testing.T, command string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(filepath.Join("node_modules", ".bin", "supergateway"), "--stdio", command,
		"--outputTransport", "streamableHttp", "--stateful", "--port", fmt.Sprint(port), "--logLevel", "none")
	cmd.Dir = testenv.NPMClients(t)
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("supergateway's log:\n%s", logs.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatalf("supergateway did not listen on %s:\n%s", addr, logs.String())
		}
	}
}

// runnerSummary returns the runner's output from its summary on.
func runnerSummary(out []byte) []byte {
	if i := bytes.Index(out, []byte("=== SUMMARY")); i >= 0 {
		return out[i:]
	}
	return out
}
