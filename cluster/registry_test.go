package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestRegistry joins two nodes to an embedded NATS server and to Debian's
// nats-server: each lists both with what their heartbeats say, a session
// one of them records is found on it, and an ended one is unknown.
func TestRegistry(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"embedded", func(t *testing.T) string { return startNATS(t).url() }},
		{"debian nats-server", startDebianNATS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url(t)
			a, _ := testNode(t, url, "node-a", "http://127.0.0.1:1001")
			b, _ := testNode(t, url, "node-b", "http://127.0.0.1:1002")
			ctx := context.Background()
			nodes, err := b.Nodes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, n := range nodes {
				ids = append(ids, n.ID)
			}
			if !slices.Equal(ids, []string{"node-a", "node-b"}) {
				t.Fatalf("nodes %v, want node-a, node-b", ids)
			}
			na := nodes[0]
			if na.Advertise != "http://127.0.0.1:1001" || !slices.Equal(na.Images, []string{"host", "datascience"}) || na.Slots != 4 || na.Busy != 1 ||
				na.MaxSessions != 16 || time.Since(na.HeartbeatAt) > time.Second || na.StartedAt.IsZero() {
				t.Errorf("node-a's entry %+v", na)
			}

			if err := a.Opened(ctx, "ses_1", "acme"); err != nil {
				t.Fatal(err)
			}
			node, alive, err := b.Owner(ctx, "ses_1")
			if err != nil || !alive || node.ID != "node-a" || node.Advertise != "http://127.0.0.1:1001" {
				t.Fatalf("Owner(ses_1) = %+v, %v, %v; want node-a alive", node, alive, err)
			}
			if _, _, err := b.Owner(ctx, "ses_unknown"); !errors.Is(err, ErrUnknown) {
				t.Errorf("Owner(unknown) err = %v, want ErrUnknown", err)
			}
			a.Ended("ses_1")
			if _, _, err := b.Owner(ctx, "ses_1"); !errors.Is(err, ErrUnknown) {
				t.Errorf("Owner(ended) err = %v, want ErrUnknown", err)
			}

			// A node that leaves is gone from the list at once.
			a.Close()
			nodes, err = b.Nodes(ctx)
			if err != nil || len(nodes) != 1 || nodes[0].ID != "node-b" {
				t.Errorf("after node-a left: %+v, %v", nodes, err)
			}
			if st, err := Status(ctx, url); err != nil || len(st) != 1 || st[0].ID != "node-b" {
				t.Errorf("Status: %+v, %v", st, err)
			}
		})
	}
}

// TestHeartbeatExpiry: a node that stops without a word (as under
// SIGKILL) drops out of the registry once its entry's TTL passes, and its
// sessions' owner is then down; before that it was alive.
func TestHeartbeatExpiry(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"embedded", func(t *testing.T) string { return startNATS(t).url() }},
		{"debian nats-server", startDebianNATS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url(t)
			a, _ := testNode(t, url, "node-a", "http://127.0.0.1:1001")
			b, _ := testNode(t, url, "node-b", "http://127.0.0.1:1002")
			ctx := context.Background()
			if err := a.Opened(ctx, "ses_1", "acme"); err != nil {
				t.Fatal(err)
			}
			// Alive across several TTLs while it beats.
			time.Sleep(3 * testTTL)
			if _, alive, err := b.Owner(ctx, "ses_1"); err != nil || !alive {
				t.Fatalf("a beating node's session: alive %v, err %v", alive, err)
			}
			crash(a)
			killed := time.Now()
			waitFor(t, testTTL+5*time.Second, "node-a's session's owner is down", func() bool {
				node, alive, err := b.Owner(ctx, "ses_1")
				return err == nil && !alive && node.ID == "node-a"
			})
			t.Logf("node-a taken for down %v after it stopped (TTL %v)", time.Since(killed).Round(time.Millisecond), testTTL)
			if d := time.Since(killed); d < testTTL/2 {
				t.Errorf("taken for down after %v, before its TTL %v", d, testTTL)
			}
			nodes, err := b.Nodes(ctx)
			if err != nil || len(nodes) != 1 || nodes[0].ID != "node-b" {
				t.Errorf("live nodes after node-a died: %+v, %v", nodes, err)
			}
		})
	}
}

// TestRestartForgetsSessions: a node that comes back under the same id
// does not resurrect the sessions its previous process held (they died
// with it); another node's sessions stay.
func TestRestartForgetsSessions(t *testing.T) {
	url := startNATS(t).url()
	a, _ := testNode(t, url, "node-a", "http://127.0.0.1:1001")
	b, _ := testNode(t, url, "node-b", "http://127.0.0.1:1002")
	ctx := context.Background()
	for _, id := range []string{"ses_a1", "ses_a2"} {
		if err := a.Opened(ctx, id, "acme"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Opened(ctx, "ses_b1", "acme"); err != nil {
		t.Fatal(err)
	}
	crash(a)
	a2, logs := testNode(t, url, "node-a", "http://127.0.0.1:1003")
	for _, id := range []string{"ses_a1", "ses_a2"} {
		if node, alive, err := b.Owner(ctx, id); !errors.Is(err, ErrUnknown) {
			t.Errorf("after node-a restarted, Owner(%s) = %+v, %v, %v; want ErrUnknown", id, node, alive, err)
		}
	}
	if node, alive, err := a2.Owner(ctx, "ses_b1"); err != nil || !alive || node.ID != "node-b" {
		t.Errorf("node-b's session after node-a restarted: %+v, %v, %v", node, alive, err)
	}
	if !contains(logs.String(), "forgot the sessions a previous process of this node held") {
		t.Errorf("the restarted node's log does not say it forgot its sessions:\n%s", logs)
	}
}
