package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// crucible runs the binary with args and returns its stdout; it fails t
// unless the exit code is want.
func crucible(t *testing.T, want int, args ...string) string {
	t.Helper()
	cmd := exec.Command(crucibleBinary(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("crucible %s: %v", strings.Join(args, " "), err)
	}
	if code != want {
		t.Fatalf("crucible %s: exit %d, want %d; stderr: %s", strings.Join(args, " "), code, want, stderr.String())
	}
	return string(out) + stderr.String()
}

// TestKeysAndTenants drives API keys through the CLI and a real server:
// without a key the server refuses to listen beyond loopback; with keys it
// listens on every address and requires one; tenants cannot see each
// other's runs or artifacts; streaming works through the SDK; a key
// revoked with the CLI stops working while the server runs.
func TestKeysAndTenants(t *testing.T) {
	testenv.Root(t)
	db := filepath.Join(t.TempDir(), "runs.db")

	refused := crucible(t, 2, "serve", "--addr", "0.0.0.0:0", "--db", db)
	if !strings.Contains(refused, "--addr") || !strings.Contains(refused, "key create") {
		t.Errorf("serve beyond loopback without keys: %q, want it to name --addr and `crucible key create`", refused)
	}
	secret := func(tenant string) string {
		var k struct{ ID, Tenant, Secret string }
		if err := json.Unmarshal([]byte(crucible(t, 0, "key", "create", "--tenant", tenant, "--name", "e2e", "--json", "--db", db)), &k); err != nil {
			t.Fatal(err)
		}
		if k.Tenant != tenant || !strings.HasPrefix(k.Secret, "crk_") {
			t.Fatalf("key create: %+v", k)
		}
		return k.Secret
	}
	aliceKey, bobKey := secret("alice"), secret("bob")
	crucible(t, 2, "key", "create", "--tenant", "Not Valid", "--db", db)
	list := crucible(t, 0, "key", "list", "--json", "--db", db)
	if strings.Contains(list, aliceKey) || strings.Count(list, `"tenant"`) != 2 {
		t.Fatalf("key list shows secrets or not both keys: %s", list)
	}

	srv := startServer(t, "keyed server", db, "--addr", "0.0.0.0:0")
	if r := srv.do(t, "GET", "/v1/runs", "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("GET /v1/runs without a key: %d %s", r.Status, r.Body)
	}
	newClient := func(key string) *client.Client {
		c, err := client.New(srv.URL, client.WithAPIKey(key))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob := newClient(aliceKey), newClient(bobKey)
	ctx := context.Background()

	var chunks []string
	var firstAt time.Time
	res, err := alice.CreateRun(ctx, sandbox.Request{
		Language: sandbox.Python,
		Code:     "import time\nprint('one', flush=True)\ntime.sleep(0.6)\nopen('r.txt', 'w').write('alice')\nprint('two')",
		OnOutput: func(stream sandbox.Stream, chunk []byte) {
			if firstAt.IsZero() {
				firstAt = time.Now()
			}
			chunks = append(chunks, string(stream)+":"+string(chunk))
		},
	})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("alice's streamed run: %+v, %v", res, err)
	}
	if got := strings.Join(chunks, ""); got != "stdout:one\nstdout:two\n" {
		t.Errorf("streamed chunks %q", chunks)
	}
	if time.Since(firstAt) < 400*time.Millisecond {
		t.Errorf("the first chunk came only %v before the result: not streamed", time.Since(firstAt))
	}
	if b, err := alice.Artifact(ctx, res.ID, "r.txt"); err != nil || string(b) != "alice" {
		t.Errorf("alice's artifact: %q, %v", b, err)
	}
	if _, err := bob.GetRun(ctx, res.ID); !client.IsNotFound(err) {
		t.Errorf("bob reading alice's run: %v, want 404", err)
	}
	if _, err := bob.Artifact(ctx, res.ID, "r.txt"); !client.IsNotFound(err) {
		t.Errorf("bob reading alice's artifact: %v, want 404", err)
	}
	if runs, _, err := bob.ListRuns(ctx, client.ListOptions{}); err != nil || len(runs) != 0 {
		t.Errorf("bob's listing: %d runs, %v", len(runs), err)
	}

	ids := crucible(t, 0, "key", "list", "--json", "--db", db)
	var keys []struct{ ID, Tenant string }
	_ = json.Unmarshal([]byte(ids), &keys)
	for _, k := range keys {
		if k.Tenant == "alice" {
			crucible(t, 0, "key", "revoke", k.ID, "--db", db)
		}
	}
	revoked := poll(10*time.Second, func() bool {
		_, _, err := alice.ListRuns(ctx, client.ListOptions{})
		var apiErr *client.APIError
		return errors.As(err, &apiErr) && apiErr.Status == http.StatusUnauthorized
	})
	if !revoked {
		t.Error("alice's key still works 10 s after `crucible key revoke`")
	}
	if _, _, err := bob.ListRuns(ctx, client.ListOptions{}); err != nil {
		t.Errorf("bob after alice's revocation: %v", err)
	}
}
