package e2bapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// The SDK tests run small scripts of tools/e2b-client/tests with E2B's
// official SDKs (npm e2b and @e2b/code-interpreter, pinned by the
// package-lock there) against a test server, configured as a user would:
// E2B_API_URL and E2B_SANDBOX_URL at the server's /e2b, E2B_API_KEY an
// e2b_ key. Each script prints one JSON object of what it saw.

// e2bClients returns tools/e2b-client, where E2B's SDKs are installed,
// and node; it stops t unless both are there.
func e2bClients(t *testing.T) (dir, node string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(root, "tools", "e2b-client")
	for _, pkg := range []string{"e2b", "@e2b/code-interpreter"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			testenv.Missing(t, "E2B's SDKs installed in "+dir+" ("+pkg+")", "run scripts/setup.sh, which runs `npm ci --prefix tools/e2b-client`")
		}
	}
	node, err = exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node on PATH, to run E2B's JavaScript SDKs", "run scripts/setup.sh, which installs Debian's nodejs")
	}
	return dir, node
}

// runSDK runs tools/e2b-client/tests/script against ts with key as
// E2B_API_KEY and the extra environment variables, and decodes what it
// printed into out.
func runSDK(t *testing.T, ts *testServer, script, key string, out any, env ...string) {
	t.Helper()
	dir, node := e2bClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("tests", script))
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"E2B_API_URL=" + ts.url, "E2B_SANDBOX_URL=" + ts.url, "E2B_API_KEY=" + key}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("node %s took %s", script, time.Since(start))
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, stdout.Bytes(), stderr.Bytes())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node %s printed %q (stderr %s): %v", script, stdout.Bytes(), stderr.Bytes(), err)
	}
	t.Logf("%s: %s", script, bytes.TrimSpace(stdout.Bytes()))
}

// thrown is what a script caught: the error's class and message, or
// what the call returned.
type thrown struct {
	Returned any    `json:"returned"`
	Name     string `json:"name"`
	Message  string `json:"message"`
}
