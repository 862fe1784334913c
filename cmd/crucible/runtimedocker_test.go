package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestRuntimeDockerCommands: `crucible run --runtime docker` and `gvisor`
// run the datascience image imported into Docker and report its digest;
// what a runtime cannot give (a network allowlist under gVisor) and flags
// that contradict the runtime are refused with exit 2 and a message naming
// the flag or field and the reason, before anything runs.
func TestRuntimeDockerCommands(t *testing.T) {
	testenv.Docker(t)
	img := testenv.Image(t, "datascience")
	host := hostKernelRelease(t)
	for _, rt := range []string{runtimeDocker, runtimeGVisor} {
		out, stderr, code := runCrucible(t, "run", "--runtime", rt, "--image", "datascience", "--local", "--json",
			"-c", "import platform; print(6*7, platform.release())")
		var res sandbox.Result
		if err := json.Unmarshal(out, &res); err != nil || code != 0 {
			t.Fatalf("run --runtime %s: exit %d, %v\nstdout: %s\nstderr: %s", rt, code, err, out, stderr)
		}
		if !strings.HasPrefix(string(res.Stdout), "42 ") || res.ImageDigest != img.Digest {
			t.Errorf("run --runtime %s: stdout %q, image digest %q; want 42 and %s", rt, res.Stdout, res.ImageDigest, img.Digest)
		}
		if hosts := strings.TrimSpace(string(res.Stdout)) == "42 "+host; hosts != (rt == runtimeDocker) {
			t.Errorf("run --runtime %s printed %q: the kernel is the host's (%s) under docker alone, gVisor's under gvisor", rt, res.Stdout, host)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"network under gvisor", []string{"run", "--runtime", "gvisor", "--image", "datascience", "--allow", "example.com", "-c", "print(1)"}, `network: must be "none" under the gvisor runtime`},
		{"docker image without docker", []string{"run", "--docker-image", "debian", "-c", "print(1)"}, "--docker-image: only with --runtime docker or gvisor"},
		{"host directories", []string{"run", "--runtime", "docker", "--image", "host", "-c", "print(1)"}, "the host's own directories cannot be a container's root"},
		{"rootfs", []string{"run", "--runtime", "gvisor", "--rootfs", "/", "-c", "print(1)"}, "--rootfs: only with --runtime native"},
		{"unknown", []string{"run", "--runtime", "kvm", "-c", "print(1)"}, `--runtime "kvm": want native, docker or gvisor`},
	} {
		_, stderr, code := runCrucible(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, code, stderr, exitUsage, tc.want)
		}
	}
}

// TestServeRuntimeDocker: `crucible serve --runtime docker` runs through
// the API in the datascience image imported into Docker, records the
// image's digest, and opens a session there whose cell runs.
func TestServeRuntimeDocker(t *testing.T) {
	testenv.Docker(t)
	img := testenv.Image(t, "datascience")
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := crucibleCommand("serve", "--runtime", "docker", "--image", "datascience", "--addr", addr, "--socket", "",
		"--db", filepath.Join(dir, "runs.db"))
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("crucible serve's log:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crucible serve --runtime docker did not answer within 2 minutes")
		}
	}
	post := func(path, body string) (int, map[string]any) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("POST %s: %s: %v", path, b, err)
		}
		return resp.StatusCode, v
	}
	status, run := post("/v1/runs", `{"code": "import pandas; print(6*7)"}`)
	if status != http.StatusOK || run["status"] != "ok" || run["stdout"] != "42\n" || run["image_digest"] != img.Digest {
		t.Fatalf("POST /v1/runs: %d %v; want ok, 42 and the image digest %s", status, run, img.Digest)
	}
	resp, err := http.Get(fmt.Sprintf("%s/v1/runs/%s", base, run["id"]))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	if rec["image_digest"] != img.Digest || rec["image"] != "datascience" {
		t.Errorf("the run's record: image %v, digest %v; want datascience, %s", rec["image"], rec["image_digest"], img.Digest)
	}
	status, ses := post("/v1/sessions", `{}`)
	if status != http.StatusOK && status != http.StatusCreated || ses["id"] == nil {
		t.Fatalf("POST /v1/sessions: %d %v", status, ses)
	}
	status, cell := post(fmt.Sprintf("/v1/sessions/%s/exec", ses["id"]), `{"code": "x = 6*7\nprint(x)"}`)
	if status != http.StatusOK || cell["stdout"] != "42\n" {
		t.Errorf("a cell of the session: %d %v; want 42", status, cell)
	}
}

// hostKernelRelease is this host's kernel release, as Python's
// platform.release() says it.
func hostKernelRelease(t *testing.T) string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// runCrucible runs the crucible command (this test binary) with args and
// returns its stdout, stderr and exit code.
func runCrucible(t *testing.T, args ...string) ([]byte, string, int) {
	t.Helper()
	cmd := crucibleCommand(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.Bytes(), stderr.String(), 0
	case errors.As(err, &ee):
		return stdout.Bytes(), stderr.String(), ee.ExitCode()
	}
	t.Fatalf("crucible %s: %v", strings.Join(args, " "), err)
	return nil, "", 0
}

// TestMCPRuntimeGVisor: `crucible mcp --runtime gvisor` runs run_code in
// the datascience image under gVisor's kernel (not the host's), and opens
// a session there.
func TestMCPRuntimeGVisor(t *testing.T) {
	testenv.Docker(t)
	testenv.Image(t, "datascience")
	cmd := exec.Command(os.Args[0], "mcp", "--runtime", "gvisor", "--image", "datascience", "--db", filepath.Join(t.TempDir(), "runs.db"))
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "import platform; print(platform.release())"}})
	if err != nil {
		t.Fatal(err)
	}
	host := hostKernelRelease(t)
	if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(text, "stdout:\n") || strings.Contains(text, "stdout:\n"+host+"\n") {
		t.Errorf("run_code under gvisor: %q (is error %v), want a kernel release other than the host's %s (gVisor's)", text, res.IsError, host)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "session_create", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Errorf("session_create under gvisor: %v, %+v", err, res)
	}
}
