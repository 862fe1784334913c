package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/cluster"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// startClusterNode starts `crucible serve --cluster nats --node-id id`
// on db, offering the host's image only.
func startClusterNode(tb testing.TB, id, db, nats string) *server {
	tb.Helper()
	return startServer(tb, id, db, "--cluster", nats, "--node-id", id, "--image", "host", "--warm", "0")
}

// clusterStatus runs `crucible cluster status --json` and returns the
// nodes' ids.
func clusterStatus(t *testing.T, nats string) []string {
	t.Helper()
	var nodes []cluster.NodeInfo
	if err := json.Unmarshal([]byte(crucible(t, 0, "cluster", "status", "--cluster", nats, "--json")), &nodes); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, n := range nodes {
		ids = append(ids, n.ID)
		if !strings.HasPrefix(n.Advertise, "http://127.0.0.1:") || len(n.Images) != 1 || n.Images[0] != "host" || n.Slots == 0 {
			t.Errorf("cluster status: node %s: %+v", n.ID, n)
		}
	}
	return ids
}

// TestCluster runs two real crucible serve nodes on loopback sharing a
// real Postgres store and Debian's nats-server: a session created through
// node A is used (exec, files) through node B with the same API key, and
// another tenant's key cannot reach it; crucible cluster status shows
// both; A killed with SIGKILL, the session answers "gone" (410) through B
// within a few seconds and the status shows B alone; a session's entry
// in the catalog goes with it when it is closed; cut off from NATS, B
// refuses new sessions (503); a node without --db postgres:// is refused
// naming the flag.
func TestCluster(t *testing.T) {
	testenv.Root(t)
	refused := crucible(t, 2, "serve", "--cluster", "nats://127.0.0.1:1", "--db", "/tmp/x.db")
	if !strings.Contains(refused, "--cluster needs --db postgres://") {
		t.Errorf("serve --cluster on SQLite: %q, want it refused naming --db postgres://", refused)
	}

	db := startPostgres(t)
	nats, natsProc := startNATSServer(t)
	secret := func(tenant string) string {
		var k struct{ Secret string }
		if err := json.Unmarshal([]byte(crucible(t, 0, "key", "create", "--tenant", tenant, "--name", "e2e", "--json", "--db", db)), &k); err != nil {
			t.Fatal(err)
		}
		return k.Secret
	}
	acme, other := secret("acme"), secret("other")
	a := startClusterNode(t, "node-a", db, nats)
	b := startClusterNode(t, "node-b", db, nats)
	sdk := func(s *server, key string) *client.Client {
		c, err := client.New(s.URL, client.WithAPIKey(key), client.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()

	if ids := clusterStatus(t, nats); strings.Join(ids, ",") != "node-a,node-b" {
		t.Fatalf("cluster status: %v, want node-a and node-b", ids)
	}
	if out := crucible(t, 0, "cluster", "status", "--cluster", nats); !strings.Contains(out, "NODE") || !strings.Contains(out, "node-a") {
		t.Errorf("cluster status as a table:\n%s", out)
	}

	sess, err := sdk(a, acme).NewSession(ctx, sandbox.SessionRequest{Image: "host"})
	if err != nil {
		t.Fatal(err)
	}
	id := sess.ID()
	if _, err := sess.Exec(ctx, sandbox.Cell{Code: "x = 41"}); err != nil {
		t.Fatal(err)
	}
	viaB := sdk(b, acme).AttachSession(id)
	res, err := viaB.Exec(ctx, sandbox.Cell{Code: "print(x + 1)"})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "42" {
		t.Fatalf("exec through node B: %+v, %v; want 42 from the state node A holds", res, err)
	}
	if err := viaB.WriteFile(ctx, "data/in.txt", []byte("from B")); err != nil {
		t.Fatalf("write a file through node B: %v", err)
	}
	if got, err := sess.ReadFile(ctx, "data/in.txt"); err != nil || string(got) != "from B" {
		t.Errorf("read through node A what B wrote: %q, %v", got, err)
	}
	if got, err := viaB.ReadFile(ctx, "data/in.txt"); err != nil || string(got) != "from B" {
		t.Errorf("read through node B: %q, %v", got, err)
	}
	if files, err := viaB.ListFiles(ctx); err != nil || len(files) == 0 {
		t.Errorf("list files through node B: %v, %v", files, err)
	}
	if info, err := viaB.Info(ctx); err != nil || info.Cells != 2 {
		t.Errorf("session info through node B: %+v, %v; want 2 cells", info, err)
	}
	var apiErr *client.APIError
	if _, err := sdk(b, other).AttachSession(id).Exec(ctx, sandbox.Cell{Code: "print(x)"}); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Errorf("another tenant's exec through node B: %v, want 404", err)
	}

	// A dies without a word.
	if err := a.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	killed := time.Now()
	for {
		_, err = viaB.Exec(ctx, sandbox.Cell{Code: "print(x)"})
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusGone {
			break
		}
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable {
			t.Fatalf("exec through B after A died: %v, want 503 (retry) until A's heartbeat expires, then 410", err)
		}
		if time.Since(killed) > 15*time.Second {
			t.Fatalf("still %v %d s after node A was killed; want 410 gone", err, 15)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the session answered gone %v after node A was killed (heartbeat TTL %v)", time.Since(killed).Round(time.Millisecond), cluster.NodeTTL)
	if want := "gone: session " + id + " was on node node-a, which is down"; apiErr.Code != "session_closed" || apiErr.Message != want ||
		!errors.Is(err, sandbox.ErrSessionClosed) {
		t.Errorf("gone answer: %+v, want 410 session_closed %q", apiErr, want)
	}
	if _, err := sdk(b, other).AttachSession(id).Exec(ctx, sandbox.Cell{Code: "1"}); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Errorf("another tenant's exec of the gone session: %v, want 404 (ids reveal nothing across tenants)", err)
	}
	if ids := clusterStatus(t, nats); strings.Join(ids, ",") != "node-b" {
		t.Errorf("cluster status after node A died: %v, want node-b alone", ids)
	}
	// B still serves: a new session on it works.
	s2, err := sdk(b, acme).NewSession(ctx, sandbox.SessionRequest{Image: "host"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s2.Exec(ctx, sandbox.Cell{Code: "print(7)"}); err != nil || strings.TrimSpace(string(res.Stdout)) != "7" {
		t.Errorf("a new session on node B: %+v, %v", res, err)
	}
	if !inCatalog(t, nats, s2.ID()) {
		t.Errorf("session %s, open on node B, is not in the catalog", s2.ID())
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if inCatalog(t, nats, s2.ID()) {
		t.Errorf("session %s, closed, is still in the catalog", s2.ID())
	}

	// Cut off from NATS, B refuses new sessions with a 503 that says why.
	_ = natsProc.Process.Kill()
	_ = natsProc.Wait()
	if _, err := sdk(b, acme).NewSession(ctx, sandbox.SessionRequest{Image: "host"}); !errors.As(err, &apiErr) ||
		apiErr.Status != http.StatusServiceUnavailable || !strings.Contains(apiErr.Message, "cannot reach the cluster (NATS)") {
		t.Errorf("a new session on node B without NATS: %v, want 503 saying it cannot reach the cluster", err)
	}
}

// jetStreamAt connects to the NATS server at url for the test's own
// reads of the cluster's buckets; the connection closes with the test.
func jetStreamAt(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// inCatalog reports whether session id has an entry in the cluster's
// catalog of owners, read from NATS directly.
func inCatalog(t *testing.T, url, id string) bool {
	t.Helper()
	js := jetStreamAt(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, cluster.OwnersBucket)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kv.Get(ctx, id)
	switch {
	case err == nil:
		return true
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return false
	}
	t.Fatal(err)
	return false
}

// TestClusterEmbedded: a node started with --cluster embedded runs the
// NATS server the other node joins; crucible cluster status, through it,
// shows both.
func TestClusterEmbedded(t *testing.T) {
	testenv.Root(t)
	db := startPostgres(t)
	port := freeLoopbackPort(t)
	nats := "nats://127.0.0.1:" + strconv.Itoa(port)
	startServer(t, "node-a", db, "--cluster", "embedded", "--cluster-listen", "127.0.0.1:"+strconv.Itoa(port),
		"--cluster-data", t.TempDir(), "--node-id", "node-a", "--image", "host", "--warm", "0")
	startClusterNode(t, "node-b", db, nats)
	if ids := clusterStatus(t, nats); strings.Join(ids, ",") != "node-a,node-b" {
		t.Errorf("cluster status: %v, want node-a and node-b", ids)
	}
}
