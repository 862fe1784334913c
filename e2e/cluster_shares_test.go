package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestClusterShares runs two real crucible serve nodes on loopback
// (Debian's nats-server, a real Postgres) whose config gives tenant acme
// 2 sessions and 2 runs: two sessions opened through node A, the third
// through node B is refused (429) naming the cluster-wide share; once
// one is closed, B opens one at once. Two sleeping runs started through
// A (async), a third through B is refused the same way; once they have
// ended, B runs one. Another tenant, with no quota configured, is not
// held by acme's. Without NATS, acme's run is refused (503): the node
// cannot count its share.
func TestClusterShares(t *testing.T) {
	testenv.Root(t)
	db := startPostgres(t)
	nats, natsProc := startNATSServer(t)
	conf := filepath.Join(t.TempDir(), "serve.json")
	if err := os.WriteFile(conf, []byte(`{"tenants": {"acme": {"max_sessions": 2, "max_concurrent_runs": 2}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := func(tenant string) string {
		var k struct{ Secret string }
		if err := json.Unmarshal([]byte(crucible(t, 0, "key", "create", "--tenant", tenant, "--name", "e2e", "--json", "--db", db)), &k); err != nil {
			t.Fatal(err)
		}
		return k.Secret
	}
	acme, other := secret("acme"), secret("other")
	node := func(id string) *server {
		return startServer(t, id, db, "--cluster", nats, "--node-id", id, "--image", "host", "--warm", "0", "--config", conf)
	}
	a, b := node("node-a"), node("node-b")
	sdk := func(s *server, key string) *client.Client {
		c, err := client.New(s.URL, client.WithAPIKey(key), client.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	refusedCluster := func(what string, err error) {
		t.Helper()
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusTooManyRequests ||
			!strings.Contains(apiErr.Message, `tenant "acme" already has 2`) || !strings.Contains(apiErr.Message, "across the cluster, its cluster-wide share (2)") {
			t.Fatalf("%s: %v; want 429 naming acme's cluster-wide share of 2", what, err)
		}
	}

	// Sessions.
	var open []sandbox.Session
	for range 2 {
		s, err := sdk(a, acme).NewSession(ctx, sandbox.SessionRequest{Image: "host"})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	_, err := sdk(b, acme).NewSession(ctx, sandbox.SessionRequest{Image: "host"})
	refusedCluster("acme's third session, through node B, with two open on node A", err)
	if s, err := sdk(b, other).NewSession(ctx, sandbox.SessionRequest{Image: "host"}); err != nil {
		t.Errorf("another tenant's session on node B: %v", err)
	} else {
		_ = s.Close()
	}
	if err := open[0].Close(); err != nil {
		t.Fatal(err)
	}
	onB, err := sdk(b, acme).NewSession(ctx, sandbox.SessionRequest{Image: "host"})
	if err != nil {
		t.Fatalf("acme's session through node B once one on node A was closed: %v", err)
	}
	if res, err := onB.Exec(ctx, sandbox.Cell{Code: "print(6 * 7)"}); err != nil || strings.TrimSpace(string(res.Stdout)) != "42" {
		t.Errorf("exec in the session on node B: %+v, %v", res, err)
	}
	_, err = sdk(a, acme).NewSession(ctx, sandbox.SessionRequest{Image: "host"})
	refusedCluster("acme's third session, through node A, with one open on each node", err)
	_ = onB.Close()
	_ = open[1].Close()

	// Runs: two sleeping ones through node A hold the share while they go on.
	sleep := sandbox.Request{Language: sandbox.Python, Image: "host", Code: "import time; time.sleep(4)"}
	var ids []string
	for range 2 {
		id, err := sdk(a, acme).RunAsync(ctx, sleep)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	quick := sandbox.Request{Language: sandbox.Python, Image: "host", Code: "print(1)"}
	_, err = sdk(b, acme).CreateRun(ctx, quick)
	refusedCluster("acme's third run, through node B, with two going on on node A", err)
	if r, err := sdk(b, other).CreateRun(ctx, quick); err != nil || r.Status != sandbox.StatusOK {
		t.Errorf("another tenant's run on node B: %+v, %v", r, err)
	}
	for _, id := range ids {
		if r, err := sdk(a, acme).WaitRun(ctx, id, 100*time.Millisecond); err != nil || r.Status != sandbox.StatusOK {
			t.Fatalf("sleeping run %s: %+v, %v", id, r, err)
		}
	}
	if r, err := sdk(b, acme).CreateRun(ctx, quick); err != nil || r.Status != sandbox.StatusOK {
		t.Errorf("acme's run through node B once those on node A ended: %+v, %v", r, err)
	}

	// Cut off from NATS, a node cannot count acme's share: it refuses.
	_ = natsProc.Process.Kill()
	_ = natsProc.Wait()
	var apiErr *client.APIError
	if _, err := sdk(b, acme).CreateRun(ctx, quick); !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable ||
		!strings.Contains(apiErr.Message, `cannot reach the cluster (NATS) to count tenant "acme"'s runs against its cluster-wide share`) {
		t.Errorf("acme's run through node B without NATS: %v, want 503 saying it cannot count the cluster-wide share", err)
	}
}
