package service

import (
	"context"
	"errors"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/store"
)

// RunOptions adjust one run.
type RunOptions struct {
	// Cache answers the run from the result cache when an identical
	// earlier run of the tenant is there, and caches its result. It is off
	// unless asked for: caching must never change what a program means,
	// and a program that reads the clock or draws random numbers means
	// something new at every run. It takes effect only when the service
	// has a Store and a CacheTTL, and never for a run with network (what
	// it reaches may answer differently each time).
	Cache bool
	// AgentRun links the run's record to the agent run that asked for it.
	AgentRun string
	// Payload is the reservation of the body the request was decoded
	// from (ReservePayload); the service releases it when the run ends,
	// or at once if the run is refused.
	Payload *Payload
}

// storeTimeout bounds the store writes that must happen even after the
// caller went away.
const storeTimeout = 10 * time.Second

// Run runs tenant's req and returns its redacted result with the ID of
// its record. req.OnOutput, if set, receives the output redacted while
// the program runs. A program that fails is not an error: it is a result with
// status "error", "timeout" and so on. The errors are a
// *sandbox.InputError (nothing ran), an *Error (refused: busy, shutting
// down) or a failure of the platform. Cancelling ctx kills the run.
func (s *Service) Run(ctx context.Context, tenant string, req sandbox.Request, opts RunOptions) (api.RunResponse, error) {
	p, hit, err := s.prepare(ctx, tenant, &req, opts)
	if err != nil || hit != nil {
		opts.Payload.Release()
		if hit != nil {
			return api.RunResponse{ID: hit.ID, CacheHit: true, Image: hit.Image, Result: resultOf(hit)}, nil
		}
		return api.RunResponse{}, err
	}
	job, err := s.route(p, req)
	if err != nil {
		opts.Payload.Release()
		return api.RunResponse{}, err
	}
	// A waiting caller learns the ID with the result: the record is
	// created while the run goes on.
	p.writes.create(*p.rec)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.base, cancel)()
	if job != nil { // another node runs it; its output comes redacted
		res := s.executeRemote(ctx, p, job, func(k EventKind, d sandbox.Data) {
			if req.OnOutput != nil {
				req.OnOutput(sandbox.Stream(k), d)
			}
		})
		return api.RunResponse{ID: p.rec.ID, Image: p.rec.Image, Result: res}, nil
	}
	if req.OnOutput != nil { // the caller sees the output redacted, like the result
		out := redactedOutput(s.cfg.Redactor, req.OnOutput)
		req.OnOutput = out.output
		defer out.flush()
	}
	res := s.execute(ctx, p, req)
	return api.RunResponse{ID: p.rec.ID, Image: p.rec.Image, Result: res}, nil
}

// Start admits tenant's req, records it and returns at once with its ID
// (and "queued"), while the run goes on until it ends or ctx ends. Follow
// it with Follow, or read its record with Get. A cache hit is answered
// with its new record's ID and final status.
func (s *Service) Start(ctx context.Context, tenant string, req sandbox.Request, opts RunOptions) (api.RunAccepted, error) {
	return s.start(ctx, tenant, req, opts, true)
}

// Stream runs tenant's req as Start does and follows it as Follow does,
// until the run ends, ctx ends or emit returns false. The caller learns
// the ID from the first event, not before: the record is created while
// the run goes on, as Run's is.
func (s *Service) Stream(ctx context.Context, tenant string, req sandbox.Request, opts RunOptions, emit func(Event) bool) error {
	acc, err := s.start(ctx, tenant, req, opts, false)
	if err != nil {
		return err
	}
	return s.Follow(ctx, tenant, acc.ID, emit)
}

// start is Start; recordFirst says the record must exist before the ID
// is answered (Start's caller may read it at once).
func (s *Service) start(ctx context.Context, tenant string, req sandbox.Request, opts RunOptions, recordFirst bool) (api.RunAccepted, error) {
	p, hit, err := s.prepare(ctx, tenant, &req, opts)
	if err != nil || hit != nil {
		opts.Payload.Release()
		if hit != nil {
			return api.RunAccepted{ID: hit.ID, Status: hit.Status}, nil
		}
		return api.RunAccepted{}, err
	}
	job, err := s.route(p, req)
	if err != nil {
		opts.Payload.Release()
		return api.RunAccepted{}, err
	}
	switch {
	case !recordFirst:
		p.writes.create(*p.rec)
	case s.cfg.Store != nil:
		if err := s.cfg.Store.Create(ctx, p.rec); err != nil {
			p.ticket.leave()
			opts.Payload.Release()
			return api.RunAccepted{}, err
		}
	}
	id := p.rec.ID
	f := s.feeds.open(tenant, id)
	f.publish(Event{Kind: EventRun, Run: &api.RunAccepted{ID: id, Status: api.StatusQueued}})
	out := newOutputRedactor(s.cfg.Redactor, func(k EventKind, d sandbox.Data) { f.publish(Event{Kind: k, Output: d}) })
	req.OnOutput = out.output
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopWithCaller := context.AfterFunc(ctx, cancel)
	stopWithService := context.AfterFunc(s.base, cancel)
	// A run for another node is queued in the cluster before its ID is
	// answered: once a caller holds the ID, the run is in the cluster's
	// queue, and this node dying cannot leave it queued with no node to
	// run it. Its output comes from the executor, redacted there.
	var remote *remoteRun
	var notQueued sandbox.Result
	if job != nil {
		remote, notQueued = s.queueRemote(runCtx, p, job, func(k EventKind, d sandbox.Data) { f.publish(Event{Kind: k, Output: d}) })
	}
	go func() {
		defer cancel()
		defer stopWithCaller()
		defer stopWithService()
		var res sandbox.Result
		switch {
		case remote != nil:
			res = s.awaitRemote(runCtx, p, remote)
		case job != nil:
			res = notQueued
		default:
			res = s.execute(runCtx, p, req)
		}
		out.flush() // the runtime delivers no output after Run returns
		f.publish(Event{Kind: EventResult, Result: &api.RunResponse{ID: id, Image: p.rec.Image, Result: res}})
		s.feeds.close(id)
	}()
	return api.RunAccepted{ID: id, Status: api.StatusQueued}, nil
}

// pending is an admitted run, about to execute.
type pending struct {
	tenant  string
	img     *Image
	rec     *api.Run
	ticket  *ticket
	writes  *recordWrites
	key     string // the cache key, "" when not cached
	payload *Payload
	policy  codePolicy
	claimed bool // the record is marked running already (a run from the cluster's queue)
}

// prepare resolves req's language and image names (an alias to its
// language, "" to the defaults), validates it, lowers its default limits
// to the server's maxima, answers it from the cache if asked and
// possible, and otherwise admits it: a place in the queue, counted in the
// tenant's share.
func (s *Service) prepare(ctx context.Context, tenant string, req *sandbox.Request, opts RunOptions) (*pending, *api.Run, error) {
	req.Language = req.Language.Canonical()
	if err := req.Validate(); err != nil {
		return nil, nil, err
	}
	img, err := s.image(req.Image)
	if err != nil {
		return nil, nil, err
	}
	req.Image = img.Name
	if err := s.validLimits(&req.Limits); err != nil {
		return nil, nil, err
	}
	if err := s.checkNetwork(tenant, img.Runtime, req.Network); err != nil {
		return nil, nil, err
	}
	pol, err := s.policyFor(tenant, req.Policy, opts.AgentRun != "")
	if err != nil {
		return nil, nil, err
	}
	var key string
	// A run under a code policy is not cached: the policy in force may
	// change, and a hit must never answer code the policy now refuses.
	if opts.Cache && s.caching() && req.Network.IsZero() && !pol.on() {
		// The key hashes the whole request (stdin may be 64 MiB): only when
		// the cache is used.
		key = store.CacheKey(*req, img.Digest)
		hit, err := s.fromCache(ctx, tenant, *req, key, opts.AgentRun)
		if err != nil || hit != nil {
			return nil, hit, err
		}
	}
	release, err := s.acquireRun(ctx, tenant) // on this node, and across the cluster (shares.go)
	if err != nil {
		return nil, nil, err
	}
	t, err := s.adm.enter(release)
	if err != nil {
		return nil, nil, err
	}
	rec := s.newRecord(tenant, *req, img)
	rec.AgentRun = opts.AgentRun
	return &pending{tenant: tenant, img: img, rec: rec, ticket: t, writes: &recordWrites{s: s}, key: key, payload: opts.Payload, policy: pol}, nil, nil
}

// caching reports whether the service has a cache at all.
func (s *Service) caching() bool { return s.cfg.Store != nil && s.cfg.CacheTTL > 0 }

// fromCache looks req up in the cache. On a hit it stores and returns a new
// record that carries the cached result and CacheHit; on a miss, nil.
func (s *Service) fromCache(ctx context.Context, tenant string, req sandbox.Request, key, agentRun string) (*api.Run, error) {
	cached, ok, err := s.cfg.Store.CacheGet(ctx, tenant, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		s.met.cacheMisses.Inc()
		return nil, nil
	}
	s.met.cacheHits.Inc()
	rec := *cached
	now := time.Now()
	rec.ID, rec.CreatedAt, rec.CacheHit, rec.AgentRun, rec.SessionID = "", time.Time{}, true, agentRun, ""
	rec.Code, _ = s.cfg.Redactor.RedactString(req.Code)
	rec.StartedAt, rec.FinishedAt = nil, &now
	if err := s.cfg.Store.Create(ctx, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// newRecord returns the record of tenant's run of req in img, queued,
// with its ID and creation time. Its code is redacted like the output:
// everything the store keeps passes redaction first, and code (a
// model's, say) may hold a secret as well as print one.
func (s *Service) newRecord(tenant string, req sandbox.Request, img *Image) *api.Run {
	code, _ := s.cfg.Redactor.RedactString(req.Code)
	return &api.Run{
		ID:          store.NewID(),
		CreatedAt:   time.Now(),
		Tenant:      tenant,
		Language:    req.Language,
		CodeHash:    sandbox.CodeHash(req.Code),
		Code:        code,
		Image:       img.Name,
		ImageDigest: img.Digest,
		Limits:      req.Limits.WithDefaults(),
		Status:      api.StatusQueued,
		ExitCode:    -1,
	}
}

// execute waits for p's slot, runs req, redacts the result, records it
// (after the writes already queued) and, if asked, caches it; then it
// gives p's place and payload back. It returns the redacted result once
// the record holds it.
func (s *Service) execute(ctx context.Context, p *pending, req sandbox.Request) sandbox.Result {
	defer p.payload.Release()
	defer p.ticket.leave()
	rec := p.rec
	var res sandbox.Result
	if err := p.ticket.wait(ctx); err != nil {
		res = s.failed(rec, sandbox.StatusKilled, "cancelled while queued")
	} else {
		started := time.Now()
		if !p.claimed {
			rec.Status, rec.StartedAt = api.StatusRunning, &started
			p.writes.update(*rec) // while the run goes on
		}
		var err error
		req.Image = "" // the runtime is the image's: it runs in no other
		res, err = runChecked(ctx, p.img.Runtime, req, p.policy)
		if err != nil {
			s.log.Error("run failed", "run", rec.ID, "err", err)
			if res.Status == "" { // not a Result at all
				res = s.failed(rec, sandbox.StatusInternal, err.Error())
			}
		}
		s.met.duration.Observe(time.Since(started).Seconds())
		s.met.runs.WithLabelValues(string(res.Status), string(req.Language)).Inc()
	}
	redactions := s.cfg.Redactor.RedactResult(&res).Total() + redactNetworkLog(s.cfg.Redactor, res.Network)
	s.met.countNetwork(res.Network)
	addHint(&res, p.img, req.Language, req.Network.String())
	s.finish(rec, &res, redactions, p.writes)
	// Only results the code determines are cached, and only those without
	// artifacts: a hit answers from the record, which holds no contents.
	if p.key != "" && (res.Status == sandbox.StatusOK || res.Status == sandbox.StatusError) && len(res.Artifacts) == 0 {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		if err := s.cfg.Store.CachePut(sctx, rec.Tenant, p.key, rec.ID, s.cfg.CacheTTL); err != nil {
			s.log.Error("cache run result", "run", rec.ID, "err", err)
		}
	}
	return res
}

// failed is the result of a run that never got to run.
func (s *Service) failed(rec *api.Run, status sandbox.Status, reason string) sandbox.Result {
	return sandbox.Result{Status: status, Reason: reason, ExitCode: -1,
		Language: rec.Language, CodeHash: rec.CodeHash, Limits: rec.Limits, ImageDigest: rec.ImageDigest}
}

// finish records res, already redacted, as rec's end, after the writes
// queued before; the artifacts are stored first, so that a client who
// sees the run finished can download them. Records are written even when
// the caller went away: a run's end must be kept.
func (s *Service) finish(rec *api.Run, res *sandbox.Result, redactions int, writes *recordWrites) {
	recordResult(rec, *res, redactions)
	if s.cfg.Store == nil || !writes.wait() {
		return // without a record there is nothing to end (logged)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if len(res.Artifacts) > 0 {
		if err := s.cfg.Store.PutArtifacts(ctx, rec.Tenant, rec.ID, res.Artifacts); err != nil {
			s.log.Error("store run artifacts", "run", rec.ID, "err", err)
			res.Status, res.Reason = sandbox.StatusInternal, "the run's artifacts could not be stored"
			recordResult(rec, *res, redactions)
		}
	}
	if err := s.cfg.Store.Update(ctx, rec); err != nil {
		if lost := s.lostMeanwhile(ctx, rec); lost != nil {
			*res, *rec = resultOf(lost), *lost
			return
		}
		s.log.Error("record run result", "run", rec.ID, "err", err)
		if s.cfg.RunQueue != nil {
			s.recordOrLose(rec, res, redactions)
		}
	}
}

// recordResult copies res into rec, which ends now.
func recordResult(rec *api.Run, res sandbox.Result, redactions int) {
	finished := time.Now()
	rec.Status, rec.Reason = res.Status, res.Reason
	rec.ExitCode, rec.Signal = res.ExitCode, res.Signal
	rec.Metrics = res.Metrics
	rec.Stdout, rec.Stderr = res.Stdout, res.Stderr
	rec.StdoutTruncated, rec.StderrTruncated = res.StdoutTruncated, res.StderrTruncated
	rec.Error = res.Error
	rec.Policy, rec.Findings = res.Policy, res.Findings
	rec.Artifacts = api.ArtifactMetas(res.Artifacts)
	rec.Network = res.Network
	rec.Redactions = redactions
	if res.ImageDigest != "" {
		rec.ImageDigest = res.ImageDigest
	}
	rec.Limits = res.Limits
	rec.FinishedAt = &finished
}

// resultOf rebuilds the Result a finished record holds, its artifacts
// without their contents.
func resultOf(rec *api.Run) sandbox.Result {
	var as []sandbox.Artifact
	for _, m := range rec.Artifacts {
		as = append(as, m.Artifact())
	}
	return sandbox.Result{
		Status: rec.Status, Reason: rec.Reason,
		ExitCode: rec.ExitCode, Signal: rec.Signal,
		Stdout: rec.Stdout, Stderr: rec.Stderr,
		StdoutTruncated: rec.StdoutTruncated, StderrTruncated: rec.StderrTruncated,
		Error:  rec.Error,
		Policy: rec.Policy, Findings: rec.Findings,
		Artifacts: as,
		Network:   rec.Network,
		Metrics:   rec.Metrics,
		Language:  rec.Language, CodeHash: rec.CodeHash,
		ImageDigest: rec.ImageDigest, Limits: rec.Limits,
	}
}

// Get returns tenant's run record id; KindNotFound when there is none.
func (s *Service) Get(ctx context.Context, tenant, id string) (*api.Run, error) {
	if s.cfg.Store == nil {
		return nil, errorf(KindNotFound, "no run %q: this service keeps no records", id)
	}
	rec, err := s.cfg.Store.Get(ctx, tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(KindNotFound, "no run %q", id)
	}
	return rec, err
}

// RunFilter selects the run records List returns (store.Filter), named
// here for the transports, which speak to service and api only.
type RunFilter = store.Filter

// List returns one page of tenant's run records, newest first, and the
// cursor of the next page ("" after the last). A cursor List did not
// return is an input error naming "cursor".
func (s *Service) List(ctx context.Context, tenant string, f store.Filter) ([]api.Run, string, error) {
	if s.cfg.Store == nil {
		return nil, "", nil
	}
	runs, next, err := s.cfg.Store.List(ctx, tenant, f)
	if errors.Is(err, store.ErrBadCursor) {
		return nil, "", invalid("cursor", "is not a cursor a listing returned")
	}
	return runs, next, err
}

// Artifact returns the stored artifact called name of tenant's run id;
// KindNotFound when there is none.
func (s *Service) Artifact(ctx context.Context, tenant, id, name string) (*api.ArtifactMeta, []byte, error) {
	if s.cfg.Store == nil {
		return nil, nil, errorf(KindNotFound, "run %q has no stored artifact %q", id, name)
	}
	meta, content, err := s.cfg.Store.GetArtifact(ctx, tenant, id, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errorf(KindNotFound, "run %q has no stored artifact %q", id, name)
	}
	return meta, content, err
}
