package service

import (
	"context"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// sweepEvery is how often a node looks for runs running on dead nodes.
var sweepEvery = 5 * time.Second

// sweep ends lost, in cluster mode, the runs the store says are running
// on nodes that are dead (not in the registry), until the service shuts
// down: runs whose front died too, which no front watches. The update is
// conditional (Store.MarkLost), so that several nodes sweeping at once
// write each end once.
func (s *Service) sweep() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.base.Done():
			return
		case <-t.C:
		}
		s.sweepOnce()
	}
}

// sweepOnce is one pass of sweep.
func (s *Service) sweepOnce() {
	q := s.cfg.RunQueue
	if q.Admit() != nil {
		return // cut off, every other node looks dead from here
	}
	ctx, cancel := context.WithTimeout(s.base, storeTimeout)
	defer cancel()
	nodes, err := s.cfg.Store.RunningNodes(ctx)
	if err != nil {
		s.log.Warn("sweep lost runs", "err", err)
		return
	}
	for _, node := range nodes {
		if node == q.NodeID() {
			continue
		}
		if alive, err := q.Alive(ctx, node); err != nil || alive {
			continue
		}
		if n, err := s.cfg.Store.MarkLost(ctx, node); err != nil {
			s.log.Warn("mark runs of a dead node lost", "node", node, "err", err)
		} else if n > 0 {
			s.log.Warn("runs of a dead node ended lost", "node", node, "count", n)
		}
	}
}

// lostMeanwhile returns rec's record when, in cluster mode, it was ended
// lost while this node ran it (the others took this node for dead: it
// could not reach the cluster): its caller is answered what the record
// says, never a result the store does not hold. Nil otherwise.
func (s *Service) lostMeanwhile(ctx context.Context, rec *api.Run) *api.Run {
	if s.cfg.RunQueue == nil {
		return nil
	}
	cur, err := s.cfg.Store.Get(ctx, rec.Tenant, rec.ID)
	if err != nil || cur.Status != api.StatusLost {
		return nil
	}
	s.log.Warn("a run ended lost while this node ran it (the cluster took this node for dead): its result is not kept", "run", rec.ID)
	return cur
}
