package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestEmbedded: a node with URL Embedded starts a NATS server that asks
// for its token; another node joins it with the token in its URL, not
// without; when the first leaves, its server goes with it.
func TestEmbedded(t *testing.T) {
	port := freePort(t)
	logs := &syncBuffer{}
	a, err := Join(context.Background(), Config{URL: Embedded, NodeID: "node-a", Advertise: "http://127.0.0.1:1001",
		Listen: fmt.Sprintf("127.0.0.1:%d", port), DataDir: t.TempDir(), Token: "s3cret",
		Logger: slog.New(slog.NewTextHandler(logs, nil)), heartbeat: testHeartbeat, ttl: testTTL})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := Join(context.Background(), Config{URL: fmt.Sprintf("nats://127.0.0.1:%d", port), NodeID: "node-x", Advertise: "http://127.0.0.1:1009",
		heartbeat: testHeartbeat, ttl: testTTL}); err == nil || !strings.Contains(err.Error(), "uthorization") {
		t.Errorf("joining without the token: %v, want an authorization error", err)
	}
	b, _ := testNode(t, fmt.Sprintf("nats://s3cret@127.0.0.1:%d", port), "node-b", "http://127.0.0.1:1002")
	nodes, err := b.Nodes(context.Background())
	if err != nil || len(nodes) != 2 {
		t.Fatalf("nodes: %+v, %v", nodes, err)
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the token is in the log:\n%s", logs)
	}
	a.Close()
	if _, err := Status(context.Background(), fmt.Sprintf("nats://s3cret@127.0.0.1:%d", port)); err == nil {
		t.Error("the embedded server still answers after its node left")
	}
}
