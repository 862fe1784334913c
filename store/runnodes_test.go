package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// runNodeTests are the suite's tests of cluster mode's queries.
var runNodeTests = []struct {
	name string
	fn   func(t *testing.T, s Store)
}{
	{"node round trip", testNodeRoundTrip},
	{"mark interrupted on a node", testMarkInterruptedOn},
	{"mark lost", testMarkLost},
	{"claim", testClaim},
}

func testClaim(t *testing.T, s Store) {
	mustCreate(t, s, &api.Run{ID: "c1", Tenant: "t", Language: sandbox.Python})
	mustCreate(t, s, &api.Run{ID: "c2", Tenant: "t", Language: sandbox.Python})
	if ok, err := s.Claim(ctx, "u", "c1", "a", at(5)); err != nil || ok {
		t.Errorf("another tenant's Claim = %v, %v; want false", ok, err)
	}
	if ok, err := s.Claim(ctx, "t", "c1", "a", at(5)); err != nil || !ok {
		t.Fatalf("first Claim = %v, %v; want true", ok, err)
	}
	if ok, err := s.Claim(ctx, "t", "c1", "b", at(6)); err != nil || ok {
		t.Errorf("second Claim = %v, %v; want false", ok, err)
	}
	got := mustGet(t, s, "t", "c1")
	if got.Status != api.StatusRunning || got.Node != "a" || got.StartedAt == nil || !got.StartedAt.Equal(at(5).Truncate(time.Microsecond)) {
		t.Errorf("claimed run: %s on %q since %v; want running on a since %v", got.Status, got.Node, got.StartedAt, at(5))
	}
	if ok, err := s.EndQueued(ctx, "t", "c1", sandbox.StatusKilled, "cancelled"); err != nil || ok {
		t.Errorf("EndQueued of a running run = %v, %v; want false", ok, err)
	}
	if ok, err := s.EndQueued(ctx, "t", "c2", sandbox.StatusKilled, "cancelled while queued"); err != nil || !ok {
		t.Fatalf("EndQueued = %v, %v; want true", ok, err)
	}
	if ok, err := s.Claim(ctx, "t", "c2", "a", at(7)); err != nil || ok {
		t.Errorf("Claim of a cancelled run = %v, %v; want false", ok, err)
	}
	if got := mustGet(t, s, "t", "c2"); got.Status != sandbox.StatusKilled || got.Reason != "cancelled while queued" || got.FinishedAt == nil {
		t.Errorf("cancelled run: %s %q %v", got.Status, got.Reason, got.FinishedAt)
	}
}

func testNodeRoundTrip(t *testing.T, s Store) {
	r := &api.Run{ID: "n1", Tenant: "t", Language: sandbox.Python}
	mustCreate(t, s, r)
	if got := mustGet(t, s, "t", "n1"); got.Node != "" {
		t.Errorf("a new run's node = %q, want empty", got.Node)
	}
	r.Status, r.Node = api.StatusRunning, "node-b"
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "t", "n1"); got.Node != "node-b" || got.Status != api.StatusRunning {
		t.Errorf("updated run: node %q status %s, want node-b running", got.Node, got.Status)
	}
}

// nodeRuns creates runs of the statuses on the nodes, named r<i>.
func nodeRuns(t *testing.T, s Store, runs []struct {
	status sandbox.Status
	node   string
}) {
	for i, r := range runs {
		mustCreate(t, s, &api.Run{ID: fmt.Sprintf("r%d", i), Tenant: "t", Language: sandbox.Python, Status: r.status, Node: r.node, CreatedAt: at(i)})
	}
}

func testMarkInterruptedOn(t *testing.T, s Store) {
	runs := []struct {
		status sandbox.Status
		node   string
	}{{api.StatusRunning, "a"}, {api.StatusQueued, "a"}, {api.StatusRunning, "b"}, {api.StatusQueued, ""}, {sandbox.StatusOK, "a"}}
	nodeRuns(t, s, runs)
	n, err := s.MarkInterruptedOn(ctx, "a")
	if err != nil || n != 2 {
		t.Fatalf("MarkInterruptedOn(a) = %d, %v; want 2", n, err)
	}
	for i, want := range []sandbox.Status{api.StatusInterrupted, api.StatusInterrupted, api.StatusRunning, api.StatusQueued, sandbox.StatusOK} {
		if got := mustGet(t, s, "t", fmt.Sprintf("r%d", i)); got.Status != want {
			t.Errorf("run r%d (%s on %q): status %s, want %s", i, runs[i].status, runs[i].node, got.Status, want)
		}
	}
}

func testMarkLost(t *testing.T, s Store) {
	runs := []struct {
		status sandbox.Status
		node   string
	}{{api.StatusRunning, "a"}, {api.StatusQueued, "a"}, {api.StatusRunning, "b"}, {sandbox.StatusOK, "a"}, {api.StatusRunning, "c"},
		{api.StatusQueued, ""}, {api.StatusQueued, "d"}}
	nodeRuns(t, s, runs)
	nodes, err := s.UnfinishedNodes(ctx)
	slices.Sort(nodes)
	if err != nil || !slices.Equal(nodes, []string{"a", "b", "c", "d"}) {
		t.Fatalf("UnfinishedNodes = %v, %v; want [a b c d]", nodes, err)
	}
	n, err := s.MarkLost(ctx, "a")
	if err != nil || n != 2 {
		t.Fatalf("MarkLost(a) = %d, %v; want 2 (running and kept queued)", n, err)
	}
	for i, want := range []struct {
		status sandbox.Status
		reason string
	}{{api.StatusLost, LostReason("a")}, {api.StatusLost, LostBeforeStartReason("a")}, {api.StatusRunning, ""},
		{sandbox.StatusOK, ""}, {api.StatusRunning, ""}, {api.StatusQueued, ""}, {api.StatusQueued, ""}} {
		got := mustGet(t, s, "t", fmt.Sprintf("r%d", i))
		if got.Status != want.status {
			t.Errorf("run r%d (%s on %q): status %s, want %s", i, runs[i].status, runs[i].node, got.Status, want.status)
		}
		if want.status == api.StatusLost && (got.Reason != want.reason || got.FinishedAt == nil) {
			t.Errorf("lost run r%d: reason %q finished %v, want %q and a time", i, got.Reason, got.FinishedAt, want.reason)
		}
	}
	if n, err := s.MarkLost(ctx, "a"); err != nil || n != 0 {
		t.Errorf("second MarkLost(a) = %d, %v; want 0", n, err)
	}
	// The node's late result is not written over the lost end.
	late := mustGet(t, s, "t", "r0")
	late.Status, late.Reason = sandbox.StatusOK, ""
	if err := s.Update(ctx, late); !errors.Is(err, ErrNotFound) {
		t.Errorf("Update of a lost run = %v, want ErrNotFound", err)
	}
	if got := mustGet(t, s, "t", "r0"); got.Status != api.StatusLost {
		t.Errorf("after a late update the lost run reads %s", got.Status)
	}
}
