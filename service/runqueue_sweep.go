package service

import (
	"context"
	"fmt"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// sweepEvery is how often a node looks for runs dead nodes left.
var sweepEvery = 5 * time.Second

// sweep ends lost, in cluster mode, the runs the store says are running
// on nodes that are dead (not in the registry), or queued behind their
// own slots, until the service shuts down: runs whose front died too,
// which no front watches, and runs a dead node kept to run itself. The update is
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
	nodes, err := s.cfg.Store.UnfinishedNodes(ctx)
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

// recordRetries bounds how long, in cluster mode, a node cut off from the
// store keeps trying to write a run's end before it gives the run up.
const recordRetries = 3 * storeTimeout

// recordOrLose is finish's last resort in cluster mode, after the write
// of rec's end failed (the store could not be reached: this node is cut
// off). The other nodes end the runs of a node they take for dead as
// lost, so a result this node cannot record must not be answered as if
// it were kept: the caller would read "ok" and the store "lost". It
// tries the write again for up to recordRetries; a record found lost
// meanwhile is answered as it is; a store still out of reach ends the
// run lost here too, with the reason, which is what the store will say
// once a sweeper reaches it.
func (s *Service) recordOrLose(rec *api.Run, res *sandbox.Result, redactions int) {
	deadline := time.Now().Add(recordRetries)
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		err := s.cfg.Store.Update(ctx, rec)
		if err == nil {
			cancel()
			return
		}
		lost := s.lostMeanwhile(ctx, rec)
		cancel()
		if lost != nil {
			*res, *rec = resultOf(lost), *lost
			return
		}
	}
	reason := fmt.Sprintf("lost: this node (%s) ran it but could not record its end: the store was out of reach", s.cfg.RunQueue.NodeID())
	*res = s.failed(rec, api.StatusLost, reason)
	recordResult(rec, *res, redactions)
	s.log.Error("a run's end could not be recorded: answered lost", "run", rec.ID)
}
