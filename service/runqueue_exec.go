package service

import (
	"context"
	"encoding/json"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// pullWait bounds one pull from the cluster's queue; an idle puller pulls
// again at once.
const pullWait = 5 * time.Second

// pullers starts, in cluster mode, the goroutines that pull runs from the
// cluster's queue: for each image, one per slot. Each pulls only while a
// slot is free (admission by pulling: a busy node takes nothing) and the
// node reaches the cluster, and stops when the service shuts down.
func (s *Service) pullers() {
	for i := range s.images {
		for range s.cfg.MaxConcurrent {
			go s.pull(s.images[i].Name)
		}
	}
}

// pull is one puller of image's runs.
func (s *Service) pull(image string) {
	q := s.cfg.RunQueue
	for s.adm.waitFree(s.base) {
		if q.Admit() != nil {
			sleep(s.base, 250*time.Millisecond)
			continue
		}
		job, start, giveBack, err := q.Take(image, pullWait)
		if err != nil {
			s.log.Warn("pull runs from the cluster", "image", image, "err", err)
			sleep(s.base, 250*time.Millisecond)
			continue
		}
		if job != nil {
			s.executeQueued(job, start, giveBack)
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// executeQueued runs a run another node (its front) queued: it takes a
// free slot (or gives the run back), claims the record (a run already
// claimed, or withdrawn, is dropped), acknowledges the message (a run
// whose acknowledgement fails is not run: JetStream would give it to
// another node, whose claim then fails), runs it with its events sent to
// the front, and writes its end.
func (s *Service) executeQueued(job []byte, start func(context.Context) error, giveBack func()) {
	q := s.cfg.RunQueue
	var qr queuedRun
	if err := json.Unmarshal(job, &qr); err != nil {
		s.log.Error("a queued run could not be read: dropped", "err", err)
		_ = start(s.base)
		return
	}
	rec, req := &qr.Rec, qr.Request
	img, err := s.image(rec.Image)
	if err != nil {
		giveBack()
		return
	}
	t, err := s.adm.enter(func() {})
	if err != nil {
		giveBack()
		return
	}
	if !t.tryRun() { // a local run took the slot meanwhile
		t.leave()
		giveBack()
		return
	}
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	stopCancel, err := q.OnCancel(rec.ID, cancel)
	if err != nil {
		t.leave()
		giveBack()
		return
	}
	defer stopCancel()
	started := time.Now()
	claimed, err := s.cfg.Store.Claim(ctx, rec.Tenant, rec.ID, q.NodeID(), started)
	if err != nil {
		s.log.Error("claim queued run", "run", rec.ID, "err", err)
		t.leave()
		giveBack()
		return
	}
	if !claimed { // run by another node, withdrawn or lost: never twice
		t.leave()
		_ = start(ctx)
		return
	}
	rec.Status, rec.StartedAt, rec.Node = api.StatusRunning, &started, q.NodeID()
	if err := start(ctx); err != nil {
		s.log.Error("a queued run could not be acknowledged: not run", "run", rec.ID, "err", err)
		res := s.failed(rec, api.StatusInterrupted, "node "+q.NodeID()+" could not acknowledge the run to the cluster (NATS), so it did not run it")
		s.finish(rec, &res, 0, &recordWrites{s: s})
		t.leave()
		return
	}
	pol, err := s.policyFor(rec.Tenant, req.Policy, rec.AgentRun != "")
	if err != nil {
		res := s.failed(rec, sandbox.StatusBlocked, err.Error())
		s.finish(rec, &res, 0, &recordWrites{s: s})
		t.leave()
		s.deliver(rec, res)
		return
	}
	out := newOutputRedactor(s.cfg.Redactor, func(k EventKind, d sandbox.Data) {
		if b, err := json.Marshal(runEvent{Kind: k, Output: d}); err == nil {
			q.Publish(rec.ID, b)
		}
	})
	req.OnOutput = out.output
	p := &pending{tenant: rec.Tenant, img: img, rec: rec, ticket: t, writes: &recordWrites{s: s}, key: qr.CacheKey, policy: pol, claimed: true}
	res := s.execute(ctx, p, req)
	out.flush()
	go s.deliver(rec, res)
}

// deliver sends a queued run's result, recorded, to its front: in the
// message when it fits, else as a sign to read the record.
func (s *Service) deliver(rec *api.Run, res sandbox.Result) {
	b, err := json.Marshal(runEvent{Kind: EventResult, Result: &api.RunResponse{ID: rec.ID, Image: rec.Image, Result: res}})
	if err != nil || len(b) > s.cfg.RunQueue.MaxJob() {
		b, _ = json.Marshal(runEvent{Kind: EventResult})
	}
	if err := s.cfg.RunQueue.Deliver(rec.ID, b); err != nil {
		s.log.Debug("the front of a run did not take its result (it reads the record)", "run", rec.ID, "err", err)
	}
}
