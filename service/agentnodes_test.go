package service_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// nodePlacement is a cluster's node as the service sees it: a Placement
// that records, with its id and a view of which nodes are alive
// (service.NodeLiveness).
type nodePlacement struct {
	recordingPlacement
	id   string
	mu   sync.Mutex
	dead map[string]bool
}

func (p *nodePlacement) ID() string { return p.id }

func (p *nodePlacement) NodeAlive(_ context.Context, node string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.dead[node], nil
}

func (p *nodePlacement) kill(node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead[node] = true
}

// nodeService is a service of node p on the shared store st.
func nodeService(t *testing.T, st store.Store, p *nodePlacement) *service.Service {
	t.Helper()
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := service.Config{Runtime: printRuntime{}, Store: st, Redactor: red, Placement: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Agents.Model = scriptedModel(t, "2", "print(1+1)")
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Shutdown(context.Background()) })
	return svc
}

// TestAgentRunNodes: in a cluster sharing one store, an agent run is
// recorded as its node's, in the store and the catalog; another node's
// start leaves it going on (it used to settle every unfinished run of the
// store); once its node is down, the node that reads it settles it
// interrupted, saying which node died, and an approval is refused.
func TestAgentRunNodes(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	a := &nodePlacement{id: "node-a", dead: map[string]bool{}}
	svcA := nodeService(t, st, a)
	run, err := svcA.StartAgentRun(ctx, "acme", api.AgentRunRequest{Task: "add", TextMode: true, Approve: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var approval *api.AgentApproval
	follow(t, svcA, "acme", run.ID, func(e service.Event) bool {
		if e.Kind == service.EventApproval {
			approval = e.Agent.Approval
		}
		return approval == nil
	})
	if approval == nil {
		t.Fatal("no approval event")
	}
	if a.opened[0] != "acme/"+run.ID {
		t.Errorf("the catalog was told %v, want the run %s first", a.opened, run.ID)
	}
	if rec, err := st.GetAgentRun(ctx, "acme", run.ID); err != nil || rec.Node != "node-a" {
		t.Fatalf("stored: %+v, %v; want node node-a", rec, err)
	}

	b := &nodePlacement{id: "node-b", dead: map[string]bool{}}
	svcB := nodeService(t, st, b)
	got, err := svcB.AgentRun("acme", run.ID)
	if err != nil || got.Status != api.AgentAwaitingApproval {
		t.Fatalf("through node-b while node-a lives: %s %q, %v; want it still awaiting approval", got.Status, got.Reason, err)
	}

	b.kill("node-a")
	got, err = svcB.AgentRun("acme", run.ID)
	if err != nil || got.Status != api.AgentInterrupted || !strings.Contains(got.Reason, "its node node-a died") || got.PendingApproval != nil {
		t.Fatalf("through node-b once node-a is down: %s %q, %v; want interrupted, its node node-a died", got.Status, got.Reason, err)
	}
	if _, err := svcB.DecideApproval("acme", run.ID, approval.ID, true, ""); kindOf(err) != service.KindConflict {
		t.Errorf("approving through node-b after node-a died: %v, want KindConflict", err)
	}
	events := replayed(t, svcB, "acme", run.ID, 0)
	if last := events[len(events)-1]; !strings.HasPrefix(last, "result ") || !strings.Contains(last, "node-a died") {
		t.Errorf("the last event read through node-b: %s; want the result saying node-a died", last)
	}
}

// TestAgentRunCatalog: an agent run is put on the catalog's record
// before it is offered and taken off once it has ended; a node that
// cannot record it (cut off from its cluster) refuses it as unavailable,
// and holds nothing of it.
func TestAgentRunCatalog(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	p := &nodePlacement{id: "node-a", dead: map[string]bool{}}
	svc := nodeService(t, st, p)
	run, err := svc.StartAgentRun(ctx, "acme", api.AgentRunRequest{Task: "add", TextMode: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	follow(t, svc, "acme", run.ID, func(service.Event) bool { return true })
	p.recordingPlacement.mu.Lock()
	opened := slices.Clone(p.opened)
	p.recordingPlacement.mu.Unlock()
	if opened[0] != "acme/"+run.ID {
		t.Errorf("recorded %v, want acme/%s first", opened, run.ID)
	}
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(p.endedList(), run.ID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the ended run %s was not taken off the record: ended %v", run.ID, p.endedList())
		}
	}

	p.recordingPlacement.mu.Lock()
	p.putErr = errors.New("cut off from the cluster")
	p.recordingPlacement.mu.Unlock()
	_, err = svc.StartAgentRun(ctx, "acme", api.AgentRunRequest{Task: "add", TextMode: true}, nil)
	if kindOf(err) != service.KindUnavailable || !strings.Contains(err.Error(), "cut off") {
		t.Fatalf("a run the node cannot record: %v, want KindUnavailable saying why", err)
	}
	if list, _, err := svc.AgentRuns(ctx, "acme", service.AgentRunPage{}); err != nil || len(list) != 1 {
		t.Errorf("listed: %d runs (%v), want only the first", len(list), err)
	}
}
