package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestPartition: a node whose NATS server goes away refuses new sessions
// (it could not record them) and says so in its log; once the server is
// back (its in-memory nodes bucket lost with it), the node records its
// heartbeat again and takes new sessions.
func TestPartition(t *testing.T) {
	ns := startNATS(t)
	a, logs := testNode(t, ns.url(), "node-a", "http://127.0.0.1:1001")
	ctx := context.Background()
	if err := a.Admit(); err != nil {
		t.Fatalf("Admit while connected: %v", err)
	}
	if err := a.Opened(ctx, "ses_before", "acme"); err != nil {
		t.Fatal(err)
	}

	ns.stop()
	cut := time.Now()
	if err := a.Opened(ctx, "ses_during", "acme"); !errors.Is(err, ErrCutOff) {
		t.Errorf("Opened while NATS is down: %v, want ErrCutOff", err)
	}
	waitFor(t, testTTL+3*time.Second, "Admit refuses once NATS has been away longer than the TTL", func() bool {
		return errors.Is(a.Admit(), ErrCutOff)
	})
	t.Logf("refusing new sessions %v after NATS stopped", time.Since(cut).Round(time.Millisecond))
	waitFor(t, 2*time.Second, "the log says the node refuses new sessions", func() bool {
		return contains(logs.String(), "cannot reach the cluster (NATS)") && contains(logs.String(), "refusing new sessions")
	})
	a.Ended("ses_before") // cannot be sent now: sent once NATS is back

	ns.start()
	waitFor(t, 10*time.Second, "Admit accepts again once NATS is back", func() bool { return a.Admit() == nil })
	waitFor(t, 2*time.Second, "the log says the node takes new sessions again", func() bool {
		return contains(logs.String(), "reached the cluster (NATS) again")
	})
	if err := a.Opened(ctx, "ses_after", "acme"); err != nil {
		t.Fatalf("Opened after NATS came back: %v", err)
	}
	if node, alive, err := a.Owner(ctx, "ses_after"); err != nil || !alive || node.ID != "node-a" {
		t.Errorf("Owner(ses_after) = %+v, %v, %v", node, alive, err)
	}
	waitFor(t, 3*time.Second, "the end of ses_before, unsent while cut off, reaches the catalog", func() bool {
		_, _, err := a.Owner(ctx, "ses_before")
		return errors.Is(err, ErrUnknown)
	})
}
