package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// EventSessionRebuilt is the event of a question that rebuilt its
// analysis's session (Agent.Rebuild), before the question is answered.
const EventSessionRebuilt EventKind = "session_rebuilt"

// sessionOf returns the analyst and the session of a, rebuilding them
// for run, the question about to be answered, when a has none. One
// question at a time asks (analysis.begin), and the service holds one
// analysis per ID (heldAnalysis): a session is rebuilt once.
func (s *Service) sessionOf(ctx context.Context, a *analysis, run *agentRun) (*analyst.Analysis, *Session, error) {
	a.mu.Lock()
	an, sess := a.an, a.sess
	a.mu.Unlock()
	if an != nil {
		return an, sess, nil
	}
	return s.rebuildSession(ctx, a, run)
}

// rebuildSession opens a new session for a, whose session is gone, in
// its image and with its limits, loads its stored datasets, and replays
// its stored cells in order (analyst.Rebuild): the state its session had
// is rebuilt, as far as its cells make it (what they read from outside
// the session, or drew at random, may differ). The replayed cells are
// recorded linked to run. Either all of it is done and the session is
// a's, or the error says what failed (the cell, by number and first
// line) and the new session is closed: nothing half-done is kept.
func (s *Service) rebuildSession(ctx context.Context, a *analysis, run *agentRun) (*analyst.Analysis, *Session, error) {
	start := time.Now()
	fail := func(format string, args ...any) error {
		return fmt.Errorf("the session of analysis %s could not be rebuilt: %s; nothing was rebuilt (ask again to retry)", a.id, fmt.Sprintf(format, args...))
	}
	a.mu.Lock()
	replayable := a.replayable
	a.mu.Unlock()
	if !replayable {
		return nil, nil, fail("its state was built by more cells than are kept (%d cells, %d MiB of code)", maxAnalysisCells, maxAnalysisCellBytes>>20)
	}
	stored, err := s.cfg.Store.AnalysisDatasets(ctx, a.tenant, a.id)
	if err != nil {
		return nil, nil, fail("reading its datasets: %v", err)
	}
	cells, err := s.cfg.Store.AnalysisCells(ctx, a.tenant, a.id)
	if err != nil {
		return nil, nil, fail("reading its cells: %v", err)
	}
	datasets := make([]analyst.Dataset, len(stored))
	for i, d := range stored {
		datasets[i] = analyst.Dataset{Name: d.Name, Content: d.Content}
	}
	an, err := analyst.Open(ctx, tenantSessions{s: s, tenant: a.tenant, agent: true}, sandbox.SessionRequest{Image: a.image, Limits: a.limits}, datasets)
	if err != nil {
		return nil, nil, &wrapped{msg: fail("opening a session and loading its datasets: %v", err).Error(), err: err}
	}
	sess, ok := an.Session.(*Session)
	if !ok {
		_ = an.Close()
		return nil, nil, fmt.Errorf("service: the analysis session is a %T", an.Session)
	}
	opened := time.Since(start)
	sess.linkAgentRun(run.id)
	err = an.Rebuild(ctx, cells, a.storedAnswers())
	sess.linkAgentRun("")
	if err != nil {
		_ = an.Close()
		var re *analyst.RebuildError
		if errors.As(err, &re) {
			return nil, nil, fail("replaying cell %d of %d (%s) ended %s: %s", re.Cell, re.Cells, firstLine(cells[re.Cell-1]), re.Status, re.Reason)
		}
		return nil, nil, &wrapped{msg: fail("replaying its cells: %v", err).Error(), err: err}
	}
	now := time.Now().UTC()
	a.mu.Lock()
	if a.deleted {
		a.mu.Unlock()
		_ = an.Close()
		return nil, nil, fail("the analysis was deleted")
	}
	a.an, a.sess, a.rebuilt, a.rebuiltCells = an, sess, &now, len(cells)
	a.mu.Unlock()
	s.watchSession(a, sess)
	if err := s.cfg.Store.MarkAnalysisRebuilt(ctx, a.tenant, a.id, now, len(cells)); err != nil {
		s.log.Error("store analysis rebuilt", "analysis", a.id, "err", err)
	}
	took := time.Since(start)
	s.log.Info("analysis session rebuilt", "analysis", a.id, "session", sess.ID(), "datasets", len(datasets), "cells", len(cells),
		"ms", took.Milliseconds(), "open_ms", opened.Milliseconds(), "replay_ms", (took - opened).Milliseconds())
	run.publish(EventSessionRebuilt, api.AgentEvent{Rebuild: &api.AnalysisRebuild{SessionID: sess.ID(), Datasets: len(datasets),
		Cells: len(cells), RebuiltAt: now, DurationMS: took.Milliseconds()}})
	return an, sess, nil
}

// wrapped is an error with a message of its own that keeps the error it
// wraps for errors.Is and errors.As (a busy server's KindBusy, a
// cancellation).
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// storedAnswers are the answers of a's questions as the analyst's
// conversation remembers them, oldest first.
func (a *analysis) storedAnswers() []*analyst.Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*analyst.Answer
	for _, q := range a.questions {
		q.mu.Lock()
		raw := q.answerJSON
		q.mu.Unlock()
		var ans analyst.Answer
		if raw == nil || json.Unmarshal(raw, &ans) != nil {
			continue
		}
		out = append(out, &ans)
	}
	return out
}

// firstLine is code's first line that is not blank, cut to 80 bytes.
func firstLine(code string) string {
	for l := range strings.Lines(code) {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 80 {
				l = l[:80] + "..."
			}
			return fmt.Sprintf("%q", l)
		}
	}
	return `""`
}
