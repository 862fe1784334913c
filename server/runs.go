package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/store"
)

// storeTimeout bounds the store writes that must happen even after the
// client went away.
const storeTimeout = 10 * time.Second

// createRun serves POST /v1/runs. A cache hit is answered at once, also
// with ?async=1 (202 with the new record's id and final status); a miss is
// admitted (or refused with 429), recorded, run, and answered with its
// result, or with 202 and status "queued" under ?async=1, or as an event
// stream under ?stream=1 (see stream.go).
func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r)
	req, apiErr := decodeRunRequest(http.MaxBytesReader(w, r.Body, s.bodyLimit(tenant)))
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	q := r.URL.Query()
	useCache, apiErr := boolParam(q.Get("cache"), "cache", true)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	async, apiErr := boolParam(q.Get("async"), "async", false)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	stream, apiErr := boolParam(q.Get("stream"), "stream", false)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if stream && async {
		writeError(w, badParam("stream", `cannot be combined with async=1: stream the run, or poll it`))
		return
	}
	// The key hashes the whole request (stdin may be 64 MiB): only when the
	// cache is used.
	var key string
	if useCache {
		key = store.CacheKey(req, s.cfg.ImageDigest)
		rec, err := s.fromCache(r.Context(), tenant, req, key)
		if err != nil {
			s.fail(w, "cache lookup", err)
			return
		}
		if rec != nil {
			if async {
				writeJSON(w, http.StatusAccepted, map[string]any{"id": rec.ID, "status": rec.Status})
				return
			}
			resp := api.RunResponse{ID: rec.ID, CacheHit: true, Result: resultOf(rec)}
			if stream {
				streamCached(w, resp)
				return
			}
			writeJSON(w, http.StatusOK, resp)
			return
		}
	}
	release, apiErr := s.tenantRuns.acquire(tenant, s.limitsFor(tenant).MaxConcurrentRuns)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	t, apiErr := s.adm.enter(release)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	rec := newRecord(tenant, req, s.cfg.ImageDigest)
	writes := &recordWrites{s: s}
	if async {
		// The record exists before its id is answered.
		if err := s.cfg.Store.Create(r.Context(), rec); err != nil {
			t.leave()
			s.fail(w, "create run record", err)
			return
		}
		id := rec.ID // rec is the background run's from now on
		_, finish := s.withFeed(rec, &req)
		go func() { finish(s.execute(s.base, t, req, rec, key, useCache, writes)) }()
		w.Header().Set("Location", "/v1/runs/"+id)
		writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "status": api.StatusQueued})
		return
	}
	// A waiting client learns the id with the result (or the stream's
	// first event): the record is created while the run goes on.
	writes.create(*rec)
	// The run ends when the client goes away or Shutdown gives up on it.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.base, cancel)()
	if !stream {
		res := s.execute(ctx, t, req, rec, key, useCache, writes)
		writeJSON(w, http.StatusOK, api.RunResponse{ID: rec.ID, Result: res})
		return
	}
	f, finish := s.withFeed(rec, &req)
	done := make(chan struct{})
	go func() {
		defer close(done)
		finish(s.execute(ctx, t, req, rec, key, useCache, writes))
	}()
	es := startEventStream(w)
	f.follow(r.Context(), es)
	es.close()
	<-done // the run was cancelled if this client went away
}

// withFeed opens the feed of the run rec records, to which req's output
// will go, and publishes its first event. finish ends the feed with the
// run's result.
func (s *Server) withFeed(rec *api.Run, req *sandbox.Request) (f *feed, finish func(sandbox.Result)) {
	f = s.feeds.open(rec.Tenant, rec.ID)
	f.publish("run", map[string]any{"id": rec.ID, "status": api.StatusQueued})
	out := newOutputRedactor(s.cfg.Redactor, f.publish)
	req.OnOutput = out.output
	id := rec.ID
	return f, func(res sandbox.Result) {
		out.flush() // the runtime delivers no output after Run returns
		f.publish("result", api.RunResponse{ID: id, Result: res})
		s.feeds.close(id)
	}
}

// streamCached answers a cache hit as an event stream: its output in one
// event per stream, then the result.
func streamCached(w http.ResponseWriter, resp api.RunResponse) {
	es := startEventStream(w)
	defer es.close()
	es.send("run", map[string]any{"id": resp.ID, "status": resp.Status})
	if len(resp.Stdout) > 0 {
		es.send(string(sandbox.StreamStdout), resp.Stdout)
	}
	if len(resp.Stderr) > 0 {
		es.send(string(sandbox.StreamStderr), resp.Stderr)
	}
	es.send("result", resp)
}

// runEvents serves GET /v1/runs/{id}/events: the run's events as a stream.
// A run in progress that has a feed (started with ?async=1 or ?stream=1)
// is followed live from its first event; any other run is followed by
// polling its record until it ends, then answered like a cache hit.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	tenant, id := tenantOf(r), r.PathValue("id")
	// The feed first: a waiting run's record may not be written yet.
	if f, ok := s.feeds.get(tenant, id); ok {
		es := startEventStream(w)
		defer es.close()
		f.follow(r.Context(), es)
		return
	}
	rec, err := s.cfg.Store.Get(r.Context(), tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, newError(http.StatusNotFound, codeNotFound, "no run %q", id))
		return
	}
	if err != nil {
		s.fail(w, "get run", err)
		return
	}
	for rec.FinishedAt == nil { // a plain synchronous run: no feed
		select {
		case <-r.Context().Done():
			return
		case <-time.After(eventsPollInterval):
		}
		if rec, err = s.cfg.Store.Get(r.Context(), tenant, id); err != nil {
			s.fail(w, "get run", err)
			return
		}
	}
	res := resultOf(rec)
	res.Artifacts = artifactsOf(rec.Artifacts)
	streamCached(w, api.RunResponse{ID: rec.ID, CacheHit: rec.CacheHit, Result: res})
}

// eventsPollInterval is how often GET /v1/runs/{id}/events rereads the
// record of a run it has no feed of.
const eventsPollInterval = 200 * time.Millisecond

// artifactsOf lists a record's artifacts without their contents, which
// are downloaded from GET /v1/runs/{id}/artifacts/{name}.
func artifactsOf(ms []api.ArtifactMeta) []sandbox.Artifact {
	var as []sandbox.Artifact
	for _, m := range ms {
		as = append(as, sandbox.Artifact{Name: m.Name, MIME: m.MIME, Size: m.Size, SHA256: m.SHA256})
	}
	return as
}

// boolParam reads an optional "0"/"1" query parameter.
func boolParam(v, name string, def bool) (bool, *apiError) {
	switch v {
	case "":
		return def, nil
	case "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, badParam(name, `must be "0" or "1", got "`+v+`"`)
}

// fromCache looks req up in the cache. On a hit it stores and returns a new
// record that carries the cached result and CacheHit; on a miss, nil.
func (s *Server) fromCache(ctx context.Context, tenant string, req sandbox.Request, key string) (*api.Run, error) {
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
	rec.ID, rec.CreatedAt, rec.CacheHit = "", time.Time{}, true
	rec.Code, rec.StartedAt, rec.FinishedAt = req.Code, nil, &now
	if err := s.cfg.Store.Create(ctx, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// newRecord returns the record of tenant's run of req, queued, with its
// ID and creation time.
func newRecord(tenant string, req sandbox.Request, imageDigest string) *api.Run {
	sum := sha256.Sum256([]byte(req.Code))
	return &api.Run{
		ID:          store.NewID(),
		CreatedAt:   time.Now(),
		Tenant:      tenant,
		Language:    req.Language,
		CodeHash:    hex.EncodeToString(sum[:]),
		Code:        req.Code,
		ImageDigest: imageDigest,
		Limits:      req.Limits.WithDefaults(),
		Status:      api.StatusQueued,
		ExitCode:    -1,
	}
}

// execute waits for t's slot, runs req, redacts the result, records it in
// rec (after the writes already queued in writes) and, if cacheable,
// caches it; then it gives t's place back. It returns the redacted result
// once the record holds it.
func (s *Server) execute(ctx context.Context, t *ticket, req sandbox.Request, rec *api.Run, key string, cacheable bool, writes *recordWrites) sandbox.Result {
	defer t.leave()
	var res sandbox.Result
	if err := t.wait(ctx); err != nil {
		res = sandbox.Result{Status: sandbox.StatusKilled, Reason: "cancelled while queued", ExitCode: -1,
			Language: req.Language, CodeHash: rec.CodeHash, Limits: rec.Limits, ImageDigest: rec.ImageDigest}
	} else {
		started := time.Now()
		rec.Status, rec.StartedAt = api.StatusRunning, &started
		writes.update(*rec) // while the run goes on
		var err error
		res, err = s.cfg.Runtime.Run(ctx, req)
		if err != nil {
			s.log.Error("run failed", "run", rec.ID, "err", err)
			if res.Status == "" { // not a Result at all, such as an input error
				res = sandbox.Result{Status: sandbox.StatusInternal, Reason: err.Error(), ExitCode: -1,
					Language: req.Language, CodeHash: rec.CodeHash, Limits: rec.Limits, ImageDigest: rec.ImageDigest}
			}
		}
		s.met.duration.Observe(time.Since(started).Seconds())
		s.met.runs.WithLabelValues(string(res.Status), string(req.Language)).Inc()
	}
	redactions := s.cfg.Redactor.RedactResult(&res).Total()
	recordResult(rec, res, redactions)
	if !writes.wait() {
		return res // logged; without a record there is nothing to end
	}
	// Records are written even when ctx ended: the run's end must be kept.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	// The artifacts are stored before the record ends, so that a client who
	// sees the run finished can download them.
	if len(res.Artifacts) > 0 {
		if err := s.cfg.Store.PutArtifacts(sctx, rec.Tenant, rec.ID, res.Artifacts); err != nil {
			s.log.Error("store run artifacts", "run", rec.ID, "err", err)
			res.Status, res.Reason = sandbox.StatusInternal, "the run's artifacts could not be stored"
			recordResult(rec, res, redactions)
		}
	}
	if err := s.cfg.Store.Update(sctx, rec); err != nil {
		s.log.Error("record run result", "run", rec.ID, "err", err)
		return res
	}
	// Only results the code determines are cached, and only those without
	// artifacts: a hit answers from the record, which holds no contents.
	if cacheable && (res.Status == sandbox.StatusOK || res.Status == sandbox.StatusError) && len(res.Artifacts) == 0 {
		if err := s.cfg.Store.CachePut(sctx, rec.Tenant, key, rec.ID, s.cfg.CacheTTL); err != nil {
			s.log.Error("cache run result", "run", rec.ID, "err", err)
		}
	}
	return res
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
	rec.Artifacts = api.ArtifactMetas(res.Artifacts)
	rec.Redactions = redactions
	if res.ImageDigest != "" {
		rec.ImageDigest = res.ImageDigest
	}
	rec.Limits = res.Limits
	rec.FinishedAt = &finished
}

// resultOf rebuilds the Result a finished record holds. Artifacts are
// never part of it: cached runs have none.
func resultOf(rec *api.Run) sandbox.Result {
	return sandbox.Result{
		Status: rec.Status, Reason: rec.Reason,
		ExitCode: rec.ExitCode, Signal: rec.Signal,
		Stdout: rec.Stdout, Stderr: rec.Stderr,
		StdoutTruncated: rec.StdoutTruncated, StderrTruncated: rec.StderrTruncated,
		Error:    rec.Error,
		Metrics:  rec.Metrics,
		Language: rec.Language, CodeHash: rec.CodeHash,
		ImageDigest: rec.ImageDigest, Limits: rec.Limits,
	}
}

// getRun serves GET /v1/runs/{id}.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	rec, err := s.cfg.Store.Get(r.Context(), tenantOf(r), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, newError(http.StatusNotFound, codeNotFound, "no run %q", r.PathValue("id")))
		return
	}
	if err != nil {
		s.fail(w, "get run", err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// listRuns serves GET /v1/runs?status=&language=&since=&limit=&cursor=.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.Filter{Status: sandbox.Status(q.Get("status")), Language: sandbox.Language(q.Get("language")), Cursor: q.Get("cursor")}
	if f.Status != "" && !api.ValidStatus(f.Status) {
		writeError(w, badParam("status", "is not a run status, got "+strconv.Quote(q.Get("status"))))
		return
	}
	if f.Language != "" && !f.Language.Valid() {
		writeError(w, badParam("language", "must be python, javascript or bash, got "+strconv.Quote(q.Get("language"))))
		return
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeError(w, badParam("since", "must be an RFC 3339 time such as 2025-01-02T15:04:05Z, got "+strconv.Quote(v)))
			return
		}
		f.Since = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, badParam("limit", "must be a positive integer, got "+strconv.Quote(v)))
			return
		}
		f.Limit = n
	}
	runs, next, err := s.cfg.Store.List(r.Context(), tenantOf(r), f)
	if errors.Is(err, store.ErrBadCursor) {
		writeError(w, badParam("cursor", "is not a cursor a listing returned"))
		return
	}
	if err != nil {
		s.fail(w, "list runs", err)
		return
	}
	if runs == nil {
		runs = []api.Run{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs, "next": next})
}

// fail logs err, a failure of the server while doing what, and answers a
// 500 that does not reveal it.
func (s *Server) fail(w http.ResponseWriter, what string, err error) {
	s.log.Error(what, "err", err)
	writeError(w, internalError)
}

// getArtifact serves GET /v1/runs/{id}/artifacts/{name...}: the artifact's
// bytes, with its media type and its SHA-256 as the ETag.
func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("name")
	meta, content, err := s.cfg.Store.GetArtifact(r.Context(), tenantOf(r), id, name)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, newError(http.StatusNotFound, codeNotFound, "run %q has no stored artifact %q", id, name))
		return
	}
	if err != nil {
		s.fail(w, "get artifact", err)
		return
	}
	w.Header().Set("Content-Type", meta.MIME)
	w.Header().Set("ETag", `"`+meta.SHA256+`"`)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Artifacts are untrusted program output: never rendered inline as a
	// page of the API's origin.
	w.Header().Set("Content-Security-Policy", "sandbox")
	w.Header().Set("Content-Length", strconv.Itoa(len(content)))
	_, _ = w.Write(content)
}

// recordWrites applies one run's record writes in order, each on a
// goroutine that waits for the previous one, so that the run need not wait
// for the store: the record's creation and its "running" mark overlap the
// sandbox's work. Each write gets a copy of the record, so the run may go
// on changing its own.
type recordWrites struct {
	s      *Server
	last   chan struct{} // closed when the latest write is done
	failed atomic.Bool   // the record could not be created (logged)
}

func (w *recordWrites) create(rec api.Run) {
	w.then("create run record", rec.ID, true, func(ctx context.Context) error { return w.s.cfg.Store.Create(ctx, &rec) })
}

func (w *recordWrites) update(rec api.Run) {
	w.then("mark run running", rec.ID, false, func(ctx context.Context) error { return w.s.cfg.Store.Update(ctx, &rec) })
}

// then queues write; if it fails, the failure is logged and, when fatal,
// the writes after it are skipped.
func (w *recordWrites) then(what, id string, fatal bool, write func(context.Context) error) {
	prev, done := w.last, make(chan struct{})
	w.last = done
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		if w.failed.Load() {
			return // the record does not exist
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if err := write(ctx); err != nil {
			w.s.log.Error(what, "run", id, "err", err)
			w.failed.Store(fatal)
		}
	}()
}

// wait blocks until every write is done and reports whether the record
// exists.
func (w *recordWrites) wait() bool {
	if w.last != nil {
		<-w.last
	}
	return !w.failed.Load()
}
