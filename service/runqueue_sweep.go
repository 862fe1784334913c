package service

import (
	"context"
	"time"
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
