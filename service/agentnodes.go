package service

import (
	"context"
	"fmt"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/store"
)

// In a cluster, nodes share one store: each agent run names the node
// that runs it (store.AgentRunRecord.Node). A node's start settles only
// its own unfinished runs (those it left when it stopped), never those
// other nodes are running; a run whose node died is settled by the node
// that reads it (storedAgentRun, as any request through another node
// does once its owner is down) or by the sweeper (sweepOrphans).

// NodeLiveness is what a Placement that is a cluster's node also tells:
// its own id, and whether another node is alive. The service asks it of
// Config.Placement; without it (one host) the node is "" and every
// unfinished run found at start is this process's.
type NodeLiveness interface {
	// ID is this node's id.
	ID() string
	// NodeAlive reports whether node has a live entry in the cluster's
	// registry; an error when the cluster cannot be asked.
	NodeAlive(ctx context.Context, node string) (bool, error)
}

// orphanSweepInterval is how often a node looks for unfinished agent
// runs of dead nodes in the store.
const orphanSweepInterval = 10 * time.Second

// nodeDied is the reason of a run settled because its node died.
const nodeDied = "interrupted: its node %s died while the run was going on; its events up to then are kept"

// liveness returns p's NodeLiveness, nil when it has none.
func liveness(p Placement) NodeLiveness {
	l, _ := p.(NodeLiveness)
	return l
}

// nodeID is the id of the node this service runs on, "" on one host.
func (s *Service) nodeID() string {
	if l := liveness(s.cfg.Placement); l != nil {
		return l.ID()
	}
	return ""
}

// ownRuns picks, at start, the unfinished runs this node left: all of
// them on one host, those naming this node (or none, written by a
// version without nodes) in a cluster.
func ownRuns(p Placement) func(store.AgentRunRecord) (bool, string) {
	l := liveness(p)
	return func(rec store.AgentRunRecord) (bool, string) {
		return l == nil || rec.Node == "" || rec.Node == l.ID(), ""
	}
}

// orphaned reports whether rec, unfinished, belongs to another node
// that is down, and the reason to settle it with.
func (s *Service) orphaned(ctx context.Context, rec store.AgentRunRecord) (bool, string) {
	l := liveness(s.cfg.Placement)
	if l == nil || rec.Node == "" || rec.Node == l.ID() {
		return false, ""
	}
	alive, err := l.NodeAlive(ctx, rec.Node)
	if err != nil || alive {
		return false, ""
	}
	return true, fmt.Sprintf(nodeDied, rec.Node)
}

// settleOrphan returns rec, settled as interrupted first when it is
// unfinished and its node is down: a run read through another node
// after its node died says so at once.
func (s *Service) settleOrphan(ctx context.Context, rec *store.AgentRunRecord) (*store.AgentRunRecord, error) {
	if rec.Run.Status != api.AgentRunning && rec.Run.Status != api.AgentAwaitingApproval {
		return rec, nil
	}
	ok, why := s.orphaned(ctx, *rec)
	if !ok {
		return rec, nil
	}
	if err := settleAgentRun(ctx, s.cfg.Store, rec, why); err != nil {
		return nil, fmt.Errorf("service: settle agent run %s of a dead node: %w", rec.Run.ID, err)
	}
	s.log.Info("settled an agent run of a dead node", "agent_run", rec.Run.ID, "node", rec.Node)
	return rec, nil
}

// sweepOrphans settles, every orphanSweepInterval until the service
// closes, the unfinished agent runs of nodes that are down; in cluster
// mode only.
func (s *Service) sweepOrphans() {
	if liveness(s.cfg.Placement) == nil || s.cfg.Store == nil {
		return
	}
	t := time.NewTicker(orphanSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.base.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.base, agentStoreTimeout)
		n, err := settleAgentRuns(ctx, s.cfg.Store, func(rec store.AgentRunRecord) (bool, string) { return s.orphaned(ctx, rec) })
		cancel()
		if err != nil {
			s.log.Warn("settle the agent runs of dead nodes", "err", err)
		} else if n > 0 {
			s.log.Info("settled agent runs of dead nodes", "count", n)
		}
	}
}
