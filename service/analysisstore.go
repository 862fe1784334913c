package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/store"
)

// With a store, an analysis is written through: at its creation (its
// datasets' bytes, bounded by the upload limits CreateAnalysis enforces:
// MaxDatasets files of at most MaxDatasetBytes, within the tenant's
// request-body limit), and at the end of each question (the question, its
// agent run as it ended, its answer, the bytes of its charts and files,
// bounded by the question's artifact budget), and with the cells that
// succeeded in its session (its questions' programs, and cells a client
// runs there: observeSession), bounded by maxAnalysisCells and
// maxAnalysisCellBytes. The
// store keeps the last analyst.MaxConversation questions, as the service
// does. An analysis whose session ended (closed, expired, or lost with
// the server's process) leaves the service's memory and is read from the
// store; its next question rebuilds a session (analysisrebuild.go).
// Only DeleteAnalysis ends an analysis for good.

// Bounds on the cells kept to rebuild an analysis's session: past either,
// the analysis can no longer be rebuilt (its next question after its
// session ended says so) and no more cells are stored.
const (
	maxAnalysisCells     = 1000
	maxAnalysisCellBytes = 8 << 20
)

// storeAnalysis writes a new analysis a, of datasets, to the store.
func (s *Service) storeAnalysis(ctx context.Context, a *analysis, datasets []analyst.Dataset) error {
	if s.cfg.Store == nil {
		return nil
	}
	rec := &store.Analysis{ID: a.id, Tenant: a.tenant, Image: a.image, Limits: a.limits, Profile: a.profile,
		ProfileText: a.profileText, CreatedAt: a.created, Replayable: true}
	for _, d := range datasets {
		rec.Datasets = append(rec.Datasets, store.AnalysisDataset{Name: d.Name, Content: d.Content})
	}
	if err := s.cfg.Store.CreateAnalysis(ctx, rec); err != nil {
		return fmt.Errorf("service: store analysis %s: %w", a.id, err)
	}
	a.created = rec.CreatedAt
	return nil
}

// heldAnalysis returns tenant's analysis id: the one the service holds,
// or, with a store, the stored one, without a session; with hold, the
// service then holds it until a question rebuilds its session (or none
// does, and it is dropped: dropIfIdle), so that concurrent questions
// find the same one and rebuild it once. The error is the registry's
// when the store has none either.
func (s *Service) heldAnalysis(ctx context.Context, tenant, id string, hold bool) (*analysis, error) {
	a, err := s.analyses.get(tenant, id)
	if err == nil || s.cfg.Store == nil {
		return a, err
	}
	s.analysesMu.Lock()
	defer s.analysesMu.Unlock()
	if a, err := s.analyses.get(tenant, id); err == nil { // loaded meanwhile
		return a, nil
	}
	rec, serr := s.cfg.Store.GetAnalysis(ctx, tenant, id)
	if errors.Is(serr, store.ErrNotFound) {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("service: read analysis %s: %w", id, serr)
	}
	qs, serr := s.cfg.Store.AnalysisQuestions(ctx, tenant, id)
	if serr != nil {
		return nil, fmt.Errorf("service: read the questions of analysis %s: %w", id, serr)
	}
	a = storedAnalysis(rec, qs)
	if !hold {
		return a, nil
	}
	if err := s.analyses.add(tenant, id, a, math.MaxInt); err != nil { // unbounded: its session, once rebuilt, is admitted
		return nil, err
	}
	return a, nil
}

// dropIfIdle ends a in the registry if it holds no session and answers
// no question: it stays in the store.
func (s *Service) dropIfIdle(a *analysis) {
	a.mu.Lock()
	idle := a.sess == nil && a.asking == nil
	a.mu.Unlock()
	if idle {
		s.analyses.end(a.id)
	}
}

// storedAnalysis is the analysis rec, with its questions qs, as the
// service holds it without a session.
func storedAnalysis(rec *store.Analysis, qs []store.AnalysisQuestion) *analysis {
	a := &analysis{id: rec.ID, tenant: rec.Tenant, image: rec.Image, limits: rec.Limits, profile: rec.Profile,
		profileText: rec.ProfileText, created: rec.CreatedAt, rebuilt: rec.RebuiltAt, rebuiltCells: rec.RebuiltCells,
		cells: rec.Cells, cellBytes: rec.CellBytes, replayable: rec.Replayable, asked: rec.Questions}
	for _, d := range rec.Datasets {
		a.datasets = append(a.datasets, d.Name)
	}
	for _, sq := range qs {
		a.questions = append(a.questions, storedQuestion(sq))
	}
	return a
}

// storedQuestion is the question sq as the service holds it: without an
// agent run of its own, its run as it ended.
func storedQuestion(sq store.AnalysisQuestion) *question {
	q := &question{n: sq.N, answerJSON: sq.Answer}
	if err := json.Unmarshal(sq.Run, &q.stored); err != nil {
		q.stored = api.AgentRun{ID: sq.RunID, Task: sq.Question, Status: api.AgentRunStatus("unknown"),
			Reason: "its stored record could not be read: " + err.Error()}
	}
	return q
}

// storedAnalyses is a page of tenant's analyses from the store, those the
// service holds described as it holds them.
func (s *Service) storedAnalyses(ctx context.Context, tenant string, limit int, cursor string) ([]api.Analysis, string, error) {
	recs, next, err := s.cfg.Store.ListAnalyses(ctx, tenant, limit, cursor)
	if errors.Is(err, store.ErrBadCursor) {
		return nil, "", invalid("cursor", "is not a cursor a listing returned")
	}
	if err != nil {
		return nil, "", fmt.Errorf("service: list analyses: %w", err)
	}
	infos := make([]api.Analysis, len(recs))
	for i := range recs {
		if a, err := s.analyses.get(tenant, recs[i].ID); err == nil {
			infos[i] = a.describe(false)
			continue
		}
		infos[i] = storedAnalysis(&recs[i], nil).describe(false)
	}
	return infos, next, nil
}

// storeQuestion writes q, a question of a that ended as end, to the
// store, with its answer's files and the cells it ran: a client that saw
// its answer finds it there after a restart. A question of an analysis
// deleted meanwhile is not written.
func (s *Service) storeQuestion(a *analysis, q *question, end api.AgentRun) {
	if s.cfg.Store == nil {
		return
	}
	end.Trace = nil
	run, err := json.Marshal(end)
	if err != nil {
		s.log.Error("encode analysis question", "analysis", a.id, "n", q.n, "err", err)
		return
	}
	sq := &store.AnalysisQuestion{N: q.n, Question: end.Task, RunID: end.ID, Run: run}
	q.mu.Lock()
	sq.Answer = q.answerJSON
	var files []sandbox.Artifact
	if q.answer != nil {
		for _, c := range q.answer.Charts {
			files = append(files, c.Artifact)
		}
		files = append(files, q.answer.Files...)
	}
	q.mu.Unlock()

	a.storeMu.Lock()
	defer a.storeMu.Unlock()
	a.mu.Lock()
	cells := a.takeCells()
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err = s.cfg.Store.AddAnalysisQuestion(ctx, a.tenant, a.id, sq, files, cells, analyst.MaxConversation)
	switch {
	case errors.Is(err, store.ErrNotFound): // deleted meanwhile
	case err != nil:
		s.log.Error("store analysis question", "analysis", a.id, "n", q.n, "err", err)
	}
}

// questionRun returns the stored record of the agent run that answered
// q, a question read from the store, with its trace and events; nil for
// a question the service holds the run of, or whose run the store does
// not hold.
func (s *Service) questionRun(ctx context.Context, tenant string, q *question) *store.AgentRunRecord {
	if q.run != nil || s.cfg.Store == nil || q.stored.ID == "" {
		return nil
	}
	rec, err := s.cfg.Store.GetAgentRun(ctx, tenant, q.stored.ID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			s.log.Error("read the agent run of an analysis's question", "agent_run", q.stored.ID, "err", err)
		}
		return nil
	}
	return rec
}

// observeSession keeps, with a store, the cells that run in sess, a's
// session, and are not the analyst's own (Unchecked: the datasets'
// loading, the helpers): those of its questions and those a client runs
// in the session directly. One that succeeded is kept to be replayed; an
// interpreter restart drops those before it (what they built is gone).
// A question's cells are stored with it; the others at once.
func (s *Service) observeSession(a *analysis, sess *Session) {
	if s.cfg.Store == nil {
		return
	}
	sess.observeCells(func(code string, res sandbox.Result) {
		a.mu.Lock()
		switch {
		case res.Restarted:
			a.pending, a.pendingReset = nil, true
		case res.Status == sandbox.StatusOK:
			a.pending = append(a.pending, code)
		}
		asking := a.asking != nil
		a.mu.Unlock()
		if !asking {
			s.storeCells(a)
		}
	})
}

// takeCells returns the cells of a to store now, within the bounds
// (maxAnalysisCells, maxAnalysisCellBytes: past them, none is stored and
// a can no longer be rebuilt), and counts them stored; a.mu is held.
func (a *analysis) takeCells() store.AnalysisCells {
	cells := store.AnalysisCells{Reset: a.pendingReset, Code: a.pending}
	a.pending, a.pendingReset = nil, false
	n, size := a.cells, a.cellBytes
	if cells.Reset {
		n, size, a.replayable = 0, 0, true
	}
	for _, c := range cells.Code {
		n++
		size += int64(len(c))
	}
	if n > maxAnalysisCells || size > maxAnalysisCellBytes || !a.replayable {
		cells.Overflow, a.replayable = true, false
	} else {
		a.cells, a.cellBytes = n, size
	}
	return cells
}

// storeCells writes the cells of a not stored yet, if any.
func (s *Service) storeCells(a *analysis) {
	if s.cfg.Store == nil {
		return
	}
	a.storeMu.Lock()
	defer a.storeMu.Unlock()
	a.mu.Lock()
	if len(a.pending) == 0 && !a.pendingReset {
		a.mu.Unlock()
		return
	}
	cells := a.takeCells()
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	switch err := s.cfg.Store.AddAnalysisCells(ctx, a.tenant, a.id, cells); {
	case errors.Is(err, store.ErrNotFound): // deleted meanwhile
	case err != nil:
		s.log.Error("store analysis cells", "analysis", a.id, "err", err)
	}
}
