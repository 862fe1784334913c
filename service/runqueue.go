package service

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/store"
)

// RunQueue is the cluster's work queue of stateless runs (package
// cluster's RunQueue), in cluster mode. A run the node that took it (its
// front) cannot start at once on a free slot of its own is queued there
// instead of in the local queue; every node pulls runs of the images it
// offers only while it has a free slot (admission by pulling), executes
// them, and sends their events back to the front. The record is written
// once: the front creates it (queued), the executor claims it (running,
// with its node; Store.Claim) and writes its end.
type RunQueue interface {
	// NodeID names this node; runs it executes record it (api.Run.Node).
	NodeID() string
	// Admit returns nil while the node reaches the cluster; cut off, it
	// queues nothing and pulls nothing (it could not report).
	Admit() error
	// MaxJob is the largest encoded run the queue carries.
	MaxJob() int
	// Enqueue subscribes to run id's events (events gets each, in order)
	// and queues job for a node offering image; stop ends the
	// subscription.
	Enqueue(ctx context.Context, image, id string, job []byte, events func([]byte)) (stop func(), err error)
	// Cancel asks the node executing run id to kill it.
	Cancel(ctx context.Context, id string) error
	// Alive reports whether node is alive (in the registry).
	Alive(ctx context.Context, node string) (bool, error)
	// Take waits up to wait for a run of image; nil when none came. start
	// acknowledges it (a run whose start fails must not run); giveBack
	// returns it to the queue.
	Take(image string, wait time.Duration) (job []byte, start func(context.Context) error, giveBack func(), err error)
	// OnCancel calls cancel when run id's front asks to kill it, until
	// stop.
	OnCancel(id string, cancel func()) (stop func(), err error)
	// Publish sends one of run id's events to its front, at most once.
	Publish(id string, event []byte)
	// Deliver sends run id's last event to its front and waits for its
	// answer.
	Deliver(id string, event []byte) error
}

// queuedRun is a run as it travels on the queue: its record as the front
// created it, the request (files and stdin included) and the options the
// executor needs. The code policy is decided again by the executor from
// the same configuration (every node of a cluster runs the same).
type queuedRun struct {
	Rec      api.Run         `json:"rec"`
	Request  sandbox.Request `json:"request"`
	CacheKey string          `json:"cache_key,omitempty"`
}

// runEvent is one event of a queued run, from its executor to its front:
// an output chunk (already redacted), or the result (nil Result: too big
// for a message, read the record).
type runEvent struct {
	Kind   EventKind        `json:"kind"`
	Output []byte           `json:"output,omitempty"`
	Result *api.RunResponse `json:"result,omitempty"`
}

// watchEvery is how often a front with no news of its queued run reads
// its record: to find it ended (its result event lost) or its executor
// dead (then it ends it lost).
var watchEvery = time.Second

// route decides where p runs, in cluster mode: here when a slot is free
// now (no hop), else on the cluster's queue (the returned job). A run too
// big for a message waits in the local queue. A node cut off from the
// cluster refuses runs (KindUnavailable), as it refuses sessions. On
// error p's place is given back.
func (s *Service) route(p *pending, req sandbox.Request) (job []byte, err error) {
	q := s.cfg.RunQueue
	if q == nil {
		return nil, nil
	}
	// Cut off, the node takes no run: the others take it for dead, so a
	// run it held would end lost by their sweepers whatever it answered.
	if err := q.Admit(); err != nil {
		p.ticket.leave()
		return nil, errorf(KindUnavailable, "%v", err)
	}
	if p.ticket.tryRun() {
		p.rec.Node = q.NodeID()
		return nil, nil
	}
	job, err = json.Marshal(queuedRun{Rec: *p.rec, Request: req, CacheKey: p.key})
	if err != nil {
		p.ticket.leave()
		return nil, err
	}
	if len(job) > q.MaxJob() {
		// Bigger than a NATS message: it waits for a slot here.
		s.log.Info("run too big for the cluster's queue: queued on this node", "run", p.rec.ID, "bytes", len(job), "max", q.MaxJob())
		p.rec.Node = q.NodeID()
		return nil, nil
	}
	return job, nil
}

// executeRemote queues p's job on the cluster's queue and waits for its
// result, passing its output (redacted by the executor) to output. It
// neither runs nor records the run: the executor does. Cancelling ctx
// withdraws the run if it is still queued, or has its executor kill it.
func (s *Service) executeRemote(ctx context.Context, p *pending, job []byte, output func(EventKind, sandbox.Data)) sandbox.Result {
	r, failed := s.queueRemote(ctx, p, job, output)
	if r == nil {
		return failed
	}
	return s.awaitRemote(ctx, p, r)
}

// remoteRun is a run queued in the cluster, its front waiting for it.
type remoteRun struct {
	stop    func() // ends the subscription to its events
	results chan *api.RunResponse
	news    chan struct{}
}

// queueRemote queues p's job once its record exists, subscribed to its
// events first. A run that cannot be queued ends here: it returns nil
// and the run's result, with p's place and payload given back.
func (s *Service) queueRemote(ctx context.Context, p *pending, job []byte, output func(EventKind, sandbox.Data)) (*remoteRun, sandbox.Result) {
	q, rec := s.cfg.RunQueue, p.rec
	giveBack := func() {
		p.payload.Release()
		p.ticket.leave()
	}
	if !p.writes.wait() { // the executor claims the record: it must exist
		giveBack()
		return nil, s.failed(rec, sandbox.StatusInternal, "the run's record could not be created")
	}
	r := &remoteRun{results: make(chan *api.RunResponse, 1), news: make(chan struct{}, 1)}
	stop, err := q.Enqueue(ctx, rec.Image, rec.ID, job, func(b []byte) {
		var e runEvent
		if json.Unmarshal(b, &e) != nil {
			return
		}
		select {
		case r.news <- struct{}{}:
		default:
		}
		switch e.Kind {
		case EventStdout, EventStderr:
			output(e.Kind, e.Output)
		case EventResult:
			if e.Result == nil {
				e.Result = &api.RunResponse{}
			}
			select {
			case r.results <- e.Result:
			default:
			}
		}
	})
	if err != nil {
		s.log.Error("queue run", "run", rec.ID, "err", err)
		res := s.endQueued(rec, sandbox.StatusInternal, "the run could not be queued in the cluster: "+err.Error())
		giveBack()
		return nil, res
	}
	r.stop = stop
	return r, sandbox.Result{}
}

// awaitRemote waits for the result of r, p's run queued in the cluster,
// then gives p's place and payload back.
func (s *Service) awaitRemote(ctx context.Context, p *pending, r *remoteRun) sandbox.Result {
	defer p.payload.Release()
	defer p.ticket.leave()
	defer r.stop()
	q, rec := s.cfg.RunQueue, p.rec
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	heard, cancelled := false, false
	done := ctx.Done()
	for {
		select {
		case res := <-r.results:
			if res.Result.Status != "" {
				return res.Result
			}
			return s.recordedResult(rec)
		case <-r.news:
			heard = true
		case <-done:
			done, cancelled = nil, true
			if res, ok := s.withdraw(rec); ok {
				return res
			}
			_ = q.Cancel(context.Background(), rec.ID) // not started yet: tried again at each tick
		case <-tick.C:
			if heard {
				heard = false
				continue
			}
			if res, ended := s.checkRemote(rec, cancelled); ended {
				return res
			}
		}
	}
}

// withdraw ends rec, cancelled while still queued, so that no node
// claims it; false when a node already did.
func (s *Service) withdraw(rec *api.Run) (sandbox.Result, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	ok, err := s.cfg.Store.EndQueued(ctx, rec.Tenant, rec.ID, sandbox.StatusKilled, "cancelled while queued")
	if err != nil || !ok {
		return sandbox.Result{}, false
	}
	return s.failed(rec, sandbox.StatusKilled, "cancelled while queued"), true
}

// endQueued ends rec, still queued, with status and reason.
func (s *Service) endQueued(rec *api.Run, status sandbox.Status, reason string) sandbox.Result {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if _, err := s.cfg.Store.EndQueued(ctx, rec.Tenant, rec.ID, status, reason); err != nil {
		s.log.Error("end queued run", "run", rec.ID, "err", err)
	}
	return s.failed(rec, status, reason)
}

// checkRemote reads rec's record when its front heard nothing for a
// while: a run that ended (its result event lost) answers its record; a
// run whose executor died is ended lost (a conditional update: only if
// still running there). A cancelled run's executor is asked again to
// kill it.
func (s *Service) checkRemote(rec *api.Run, cancelled bool) (sandbox.Result, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	cur, err := s.cfg.Store.Get(ctx, rec.Tenant, rec.ID)
	if err != nil {
		s.log.Warn("read queued run", "run", rec.ID, "err", err)
		return sandbox.Result{}, false
	}
	if cur.FinishedAt != nil {
		return resultOf(cur), true
	}
	if cur.Status != api.StatusRunning || cur.Node == "" {
		return sandbox.Result{}, false // still queued
	}
	alive, err := s.cfg.RunQueue.Alive(ctx, cur.Node)
	if err != nil || alive {
		if cancelled {
			_ = s.cfg.RunQueue.Cancel(ctx, rec.ID)
		}
		return sandbox.Result{}, false
	}
	if _, err := s.cfg.Store.MarkLost(ctx, cur.Node); err != nil {
		s.log.Error("mark runs of a dead node lost", "node", cur.Node, "err", err)
		return sandbox.Result{}, false
	}
	return s.recordedResult(rec), true
}

// recordedResult is rec's result as its record holds it.
func (s *Service) recordedResult(rec *api.Run) sandbox.Result {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	cur, err := s.cfg.Store.Get(ctx, rec.Tenant, rec.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("read run result", "run", rec.ID, "err", err)
	}
	if err != nil || cur.FinishedAt == nil {
		return s.failed(rec, sandbox.StatusInternal, "the run ended on another node but its record could not be read")
	}
	return resultOf(cur)
}
