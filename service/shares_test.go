package service_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/cluster"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// joinNode joins the cluster at url as id; it leaves when tb ends.
func joinNode(tb testing.TB, url, id string) *cluster.Node {
	tb.Helper()
	n, err := cluster.Join(context.Background(), cluster.Config{URL: url, NodeID: id, Advertise: "http://127.0.0.1:1",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { n.Close() })
	return n
}

// refusedAcrossCluster fails t unless err is KindBusy naming tenant
// acme's cluster-wide share.
func refusedAcrossCluster(t *testing.T, what string, err error) {
	t.Helper()
	if kindOf(err) != service.KindBusy || !strings.Contains(fmt.Sprint(err), "across the cluster, its cluster-wide share") {
		t.Errorf("%s: %v, want KindBusy naming the cluster-wide share", what, err)
	}
}

// TestSharesAcrossNodes: two services, each the service of a node of one
// cluster (real cluster.Nodes on Debian's nats-server), with acme's
// quota of 2 sessions, 1 run and 1 agent run: what acme holds on one
// node counts on the other, with the refusal naming the cluster-wide
// share; what ends gives its share back (a closed session, a session
// whose sandbox ended on its own, a refused one that took none, an ended
// run, a cancelled agent run); a tenant without a quota configured is
// counted per node only.
func TestSharesAcrossNodes(t *testing.T) {
	url := service.StartNATSForTest(t)
	ctx := context.Background()
	model := scriptedModel(t, "2", "print(1+1)")
	quota := map[string]service.TenantLimits{"acme": {MaxSessions: 2, MaxConcurrentRuns: 1, MaxAgentRuns: 1}}
	rtA, rtB := &fakeRuntime{gate: make(chan struct{})}, &fakeRuntime{}
	svc := func(rt *fakeRuntime, id string) *service.Service {
		node := joinNode(t, url, id)
		return newService(t, rt, func(c *service.Config) { c.Shares, c.Tenants, c.Agents.Model = node, quota, model })
	}
	a, b := svc(rtA, "node-a"), svc(rtB, "node-b")
	open := func(s *service.Service, tenant string) (*service.Session, error) {
		return s.OpenSession(ctx, tenant, sandbox.SessionRequest{}, service.SessionOptions{})
	}

	// Sessions.
	s1, err := open(a, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open(a, "acme"); err != nil {
		t.Fatal(err)
	}
	_, err = open(b, "acme")
	refusedAcrossCluster(t, "acme's third session, on node B", err)
	_, err = open(b, "acme") // a refusal gives back nothing it did not take
	refusedAcrossCluster(t, "acme's third session again", err)
	for range 3 {
		if _, err := open(b, "other"); err != nil {
			t.Errorf("another tenant's session on node B: %v", err)
		}
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s3, err := open(b, "acme")
	if err != nil {
		t.Fatalf("acme's session on node B once one on node A closed: %v", err)
	}
	_, err = open(a, "acme")
	refusedAcrossCluster(t, "acme's third session, on node A", err)
	// s3's sandbox ends on its own (its interpreter died): its share goes.
	rtB.mu.Lock()
	sandboxOfS3 := rtB.opened[len(rtB.opened)-1]
	rtB.mu.Unlock()
	if sandboxOfS3.ID() != s3.ID() {
		t.Fatalf("the last sandbox node B opened is %s, not session %s", sandboxOfS3.ID(), s3.ID())
	}
	_ = sandboxOfS3.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := open(a, "acme")
		if err == nil {
			_ = s.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acme's session on node A after the one on node B ended on its own: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Runs: one held by node A's gate.
	acc, err := a.Start(ctx, "acme", py("held"), service.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Run(ctx, "acme", py("x"), service.RunOptions{})
	refusedAcrossCluster(t, "acme's second run, on node B", err)
	if _, err := b.Run(ctx, "other", py("x"), service.RunOptions{}); err != nil {
		t.Errorf("another tenant's run on node B: %v", err)
	}
	close(rtA.gate)
	for {
		r, err := a.Get(ctx, "acme", acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != api.StatusQueued && r.Status != api.StatusRunning {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, err := b.Run(ctx, "acme", py("x"), service.RunOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acme's run on node B once node A's ended: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Agent runs: one waiting for its approval on node A.
	waiting := api.AgentRunRequest{Task: "add", TextMode: true, Approve: true}
	run, err := a.StartAgentRun(ctx, "acme", waiting, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.StartAgentRun(ctx, "acme", waiting, nil)
	refusedAcrossCluster(t, "acme's second agent run, on node B", err)
	if _, err := a.CancelAgentRun(ctx, "acme", run.ID); err != nil {
		t.Fatal(err)
	}
	again, err := b.StartAgentRun(ctx, "acme", waiting, nil)
	if err != nil {
		t.Fatalf("acme's agent run on node B once node A's was cancelled: %v", err)
	}
	if _, err := b.CancelAgentRun(ctx, "acme", again.ID); err != nil {
		t.Fatal(err)
	}
}
