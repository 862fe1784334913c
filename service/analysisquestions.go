package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/store"
)

// EventAnswer is the event of an analysis's question that carries its
// answer (Agent.Question), just before EventResult.
const EventAnswer EventKind = "answer"

// maxQuestionReplayOutput bounds the output a question's events keep
// once it ended, all its programs together: a client that follows a
// question after its end (a page reopened) sees what each attempt
// printed, not only how it ended. An analysis keeps its last
// analyst.MaxConversation questions, so this bounds what it holds too.
const maxQuestionReplayOutput = 256 << 10

// question is one question of an analysis: the agent run that answers
// it, and its answer once there is one. A question read from the store
// has no run: stored is its run as it ended.
type question struct {
	n      int
	run    *agentRun
	stored api.AgentRun

	mu         sync.Mutex
	answer     *analyst.Answer // with its artifacts' contents, for downloads
	answerJSON json.RawMessage // redacted, without contents
}

// describe describes q; with trace, its run's trace; with answer, its
// answer's details.
func (q *question) describe(trace, answer bool) api.AnalysisQuestion {
	d := api.AnalysisQuestion{N: q.n, Run: q.stored}
	if q.run != nil {
		d.Run = q.run.snapshot(trace)
	}
	if answer {
		q.mu.Lock()
		d.Answer = q.answerJSON
		q.mu.Unlock()
	}
	return d
}

// AskAnalysis starts answering tenant's question req about analysis id
// and returns the question at once (its run running), while the agent
// goes on in the analysis's session until it ends or is cancelled: the
// caller going away never ends it. The question is an agent run, with
// the same budgets, maxima, approvals, events and retention (see
// StartAgentRun); its cells are recorded linked to it. Follow it with
// AnalysisQuestionEvents.
//
// The refusals: KindNotConfigured without a model; KindNotFound or
// KindSessionClosed for the analysis; an input error naming the field for
// an empty or oversized question or a budget above the server's maximum;
// KindConflict while another question of the analysis is answered;
// KindBusy when the tenant's share of agent runs is taken.
//
// With a store, an analysis whose session ended is asked as well: the
// question first opens a new session in the analysis's image, loads the
// stored datasets and replays the stored cells (rebuildSession, its
// stream's first event after agent_run is then session_rebuilt), then
// answers. Every question that ends is written to the store.
func (s *Service) AskAnalysis(ctx context.Context, tenant, id string, req api.QuestionRequest) (api.AnalysisQuestion, error) {
	if s.cfg.Agents.Model == nil {
		return api.AnalysisQuestion{}, errNoModel
	}
	a, err := s.heldAnalysis(ctx, tenant, id, true)
	if err != nil {
		return api.AnalysisQuestion{}, err
	}
	q, work, err := s.newQuestion(a, req)
	if err != nil {
		s.dropIfIdle(a)
		return api.AnalysisQuestion{}, err
	}
	ended := func(end api.AgentRun) {
		s.storeQuestion(a, q, end)
		a.finished(q)
		s.storeCells(a) // those run beside the question since it was stored
		s.dropIfIdle(a) // its session could not be rebuilt
		d := q.describe(false, true)
		q.run.publish(EventAnswer, api.AgentEvent{Question: &d})
	}
	if _, err := s.launch(ctx, q.run, func() {}, work, ended); err != nil {
		a.abandon(q)
		s.dropIfIdle(a)
		return api.AnalysisQuestion{}, err
	}
	return q.describe(false, false), nil
}

// newQuestion validates req, a question about analysis a (the service has
// a model: AskAnalysis checked), and holds the
// analysis's turn for it; work answers it, after rebuilding a's session
// if it has none.
func (s *Service) newQuestion(a *analysis, req api.QuestionRequest) (*question, func(context.Context) (*agent.Trace, error), error) {
	model := s.cfg.Agents.Model
	switch {
	case strings.TrimSpace(req.Question) == "":
		return nil, nil, invalid("question", "must state the question; it is empty")
	case len(req.Question) > analyst.MaxQuestionBytes:
		return nil, nil, invalid("question", "must be at most %d bytes, got %d", analyst.MaxQuestionBytes, len(req.Question))
	}
	cfg, err := s.agentConfig(api.AgentRunRequest{MaxRetries: req.MaxRetries, MaxTokens: req.MaxTokens, MaxExecMS: req.MaxExecMS,
		CellTimeoutMS: req.CellTimeoutMS, MaxArtifactBytes: req.MaxArtifactBytes, TextMode: req.TextMode})
	if err != nil {
		return nil, nil, err
	}
	run := s.newRun(a.tenant, req.Question, a.image)
	run.keepOutput = maxQuestionReplayOutput
	q, err := a.begin(run)
	if err != nil {
		return nil, nil, err
	}
	opt := analyst.AskOptions{Model: model, ID: run.id, TextMode: cfg.TextMode, MaxRetries: cfg.MaxRetries,
		MaxTokens: cfg.MaxTokens, MaxExecTime: cfg.MaxExecTime, MaxArtifactBytes: cfg.MaxArtifactBytes,
		CellTimeout: cfg.CellTimeout, OnEvent: run.analystEvent}
	if req.Approve {
		opt.Approve = run.approve
	}
	work := func(ctx context.Context) (*agent.Trace, error) {
		an, sess, err := s.sessionOf(ctx, a, run)
		if err != nil {
			return nil, err
		}
		sess.linkAgentRun(run.id)
		defer sess.linkAgentRun("")
		ans, err := an.Ask(ctx, req.Question, opt)
		if err != nil {
			return nil, err
		}
		raw, err := redactedAnswer(s, ans)
		if err != nil {
			s.log.Error("encode analysis answer", "agent_run", run.id, "err", err)
		}
		q.mu.Lock()
		q.answer, q.answerJSON = ans, raw
		q.mu.Unlock()
		return ans.Trace, nil
	}
	return q, work, nil
}

// redactedAnswer is ans as JSON, every string redacted, its artifacts
// without their contents.
func redactedAnswer(s *Service, ans *analyst.Answer) (json.RawMessage, error) {
	c := *ans
	c.Charts = slices.Clone(c.Charts)
	for i := range c.Charts {
		c.Charts[i].Content = nil
	}
	c.Files = slices.Clone(c.Files)
	for i := range c.Files {
		c.Files[i].Content = nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return redactJSON(s.cfg.Redactor, b)
}

// analystEvent publishes the analyst's progress on a question as the
// events of an agent run: the model's turns, retries and verdicts as
// steps, the code, its output and how it ended.
func (run *agentRun) analystEvent(e analyst.Event) {
	switch e.Kind {
	case analyst.EventModel:
		run.onEvent(agent.Event{Kind: agent.StepModel, Attempt: e.Attempt, Message: e.Message})
	case analyst.EventRetry:
		run.onEvent(agent.Event{Kind: agent.StepFeedback, Attempt: e.Attempt, Message: e.Message})
	case analyst.EventVerify:
		run.onEvent(agent.Event{Kind: agent.StepVerify, Attempt: e.Attempt, Message: e.Message})
	case analyst.EventCode:
		run.publishCode(e.Attempt, e.Code)
	case analyst.EventOutput:
		run.output(e.Stream, []byte(e.Text))
	case analyst.EventStatus:
		if e.Result != nil {
			run.publishExecution(e.Attempt, *e.Result)
		}
	}
}

// begin makes q, answered by run, the analysis's question being answered:
// KindConflict if one is already.
func (a *analysis) begin(run *agentRun) (*question, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if q := a.asking; q != nil {
		return nil, &Error{Kind: KindConflict, Field: "question", Rule: "must wait until the analysis's question being answered has ended",
			Message: fmt.Sprintf("analysis %s is answering question %d; follow it (GET /v1/analyses/%s/questions/%d/events), then ask again", a.id, q.n, a.id, q.n)}
	}
	a.asked++
	q := &question{n: a.asked, run: run}
	a.questions = append(a.questions, q)
	if n := len(a.questions) - analyst.MaxConversation; n > 0 {
		a.questions = slices.Delete(a.questions, 0, n)
	}
	a.asking = q
	return q, nil
}

// finished ends q's turn.
func (a *analysis) finished(q *question) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.asking == q {
		a.asking = nil
	}
}

// abandon forgets q, which never started.
func (a *analysis) abandon(q *question) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.questions = slices.DeleteFunc(a.questions, func(o *question) bool { return o == q })
	a.asked--
	a.asking = nil
}

// question returns the analysis's question n: KindNotFound naming field
// n if it has none (or no longer holds it).
func (a *analysis) question(n int) (*question, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, q := range a.questions {
		if q.n == n {
			return q, nil
		}
	}
	return nil, &Error{Kind: KindNotFound, Field: "n", Rule: fmt.Sprintf("must number a question of the analysis (it keeps the last %d)", analyst.MaxConversation),
		Message: fmt.Sprintf("analysis %s has no question %d", a.id, n)}
}

// analysisQuestion returns question n of tenant's analysis id.
func (s *Service) analysisQuestion(ctx context.Context, tenant, id string, n int) (*question, error) {
	a, err := s.heldAnalysis(ctx, tenant, id, false)
	if err != nil {
		return nil, err
	}
	return a.question(n)
}

// AnalysisQuestion returns question n of tenant's analysis id, with its
// answer and, once it ended, its run's trace (not for a question read
// from the store: the trace is not stored with it).
func (s *Service) AnalysisQuestion(ctx context.Context, tenant, id string, n int) (api.AnalysisQuestion, error) {
	q, err := s.analysisQuestion(ctx, tenant, id, n)
	if err != nil {
		return api.AnalysisQuestion{}, err
	}
	d := q.describe(true, true)
	if rec := s.questionRun(ctx, tenant, q); rec != nil {
		d.Run.Trace = rec.Run.Trace
	}
	return d, nil
}

// AnalysisQuestions returns the conversation of tenant's analysis id,
// oldest first: each question with its answer, without traces.
func (s *Service) AnalysisQuestions(ctx context.Context, tenant, id string) ([]api.AnalysisQuestion, error) {
	a, err := s.heldAnalysis(ctx, tenant, id, false)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	qs := slices.Clone(a.questions)
	a.mu.Unlock()
	out := make([]api.AnalysisQuestion, len(qs))
	for i, q := range qs {
		out[i] = q.describe(false, true)
	}
	return out, nil
}

// AnalysisQuestionEvents returns the events of question n of tenant's
// analysis id after position after, as AgentRunEvents does for an agent
// run; the answer event comes before the result. Unlike an agent run's,
// a question's stream replayed after its end still holds its output, up
// to 256 KiB of it (the answer holds the output of the code that gave
// it; the run records hold every execution's). A question read from the
// store (asked before the service last lost the analysis's session) has
// the events its agent run's record keeps, or, when the store has no
// such record, only its answer event (id 1) and its result (id 2).
func (s *Service) AnalysisQuestionEvents(ctx context.Context, tenant, id string, n int, after int64) (iter.Seq[Event], error) {
	q, err := s.analysisQuestion(ctx, tenant, id, n)
	if err != nil {
		return nil, err
	}
	if q.run != nil {
		return q.run.events(ctx, after)
	}
	rec := s.questionRun(ctx, tenant, q)
	if rec == nil {
		return q.storedEvents(after)
	}
	if after < 0 {
		return nil, invalid("after", "must be a non-negative integer, got %d", after)
	}
	events, err := s.storedEvents(ctx, rec, after)
	if err != nil || events == nil {
		return nil, err
	}
	return slices.Values(events), nil
}

// storedEvents are the events of a question read from the store after
// position after: its answer (1) and its result (2).
func (q *question) storedEvents(after int64) (iter.Seq[Event], error) {
	if after < 0 {
		return nil, invalid("after", "must be a non-negative integer, got %d", after)
	}
	d := q.describe(false, true)
	end := q.stored
	events := []Event{{ID: 1, Kind: EventAnswer, Agent: &api.AgentEvent{Question: &d}},
		{ID: 2, Kind: EventResult, Agent: &api.AgentEvent{Run: &end}}}
	if after >= 2 {
		return nil, nil
	}
	return func(yield func(Event) bool) {
		for _, e := range events[after:] {
			if !yield(e) {
				return
			}
		}
	}, nil
}

// StreamAnalysisQuestion asks tenant's question req as AskAnalysis does
// and passes its events to emit until it ends. The question is bound to
// the caller: when ctx ends or emit returns false before its end, it is
// cancelled.
func (s *Service) StreamAnalysisQuestion(ctx context.Context, tenant, id string, req api.QuestionRequest, emit func(Event) bool) error {
	started, err := s.AskAnalysis(ctx, tenant, id, req)
	if err != nil {
		return err
	}
	q, err := s.analysisQuestion(ctx, tenant, id, started.N)
	if err != nil {
		return fmt.Errorf("service: question %d of analysis %s vanished: %w", started.N, id, err)
	}
	q.run.followBound(ctx, emit)
	return nil
}

// DecideQuestionApproval decides approval approvalID of question n of
// tenant's analysis id, as DecideApproval does for an agent run.
func (s *Service) DecideQuestionApproval(ctx context.Context, tenant, id string, n int, approvalID string, approve bool, reason string) (api.AgentDecision, error) {
	q, err := s.analysisQuestion(ctx, tenant, id, n)
	if err != nil {
		return api.AgentDecision{}, err
	}
	if q.run == nil {
		return api.AgentDecision{}, &Error{Kind: KindNotFound, Field: "approval_id", Rule: "must name a pending approval of the question",
			Message: fmt.Sprintf("question %d of analysis %s has ended: it waits for no approval", n, id)}
	}
	return q.run.decide(approvalID, approve, reason)
}

// AnalysisFile returns a chart or a file of an answer of tenant's
// analysis id called name: of question n, or with n 0 of the latest
// answer that has one so called. Its content was redacted when its cell
// ended: content that is not text and holds a secret is KindWithheld,
// content over the artifact budget KindNotFound. The answers the service
// no longer holds are read from the store.
func (s *Service) AnalysisFile(ctx context.Context, tenant, id, name string, n int) (sandbox.Artifact, error) {
	a, err := s.heldAnalysis(ctx, tenant, id, false)
	if err != nil {
		return sandbox.Artifact{}, err
	}
	a.mu.Lock()
	qs := slices.Clone(a.questions)
	a.mu.Unlock()
	if n != 0 {
		q, err := a.question(n)
		if err != nil {
			return sandbox.Artifact{}, err
		}
		qs = []*question{q}
	}
	for _, q := range slices.Backward(qs) {
		if art, ok := q.artifact(name); ok {
			return servedFile(art)
		}
	}
	if s.cfg.Store != nil {
		art, err := s.cfg.Store.AnalysisFile(ctx, tenant, id, n, name)
		switch {
		case err == nil:
			return servedFile(art)
		case !errors.Is(err, store.ErrNotFound):
			return sandbox.Artifact{}, fmt.Errorf("service: read file %q of analysis %s: %w", name, id, err)
		}
	}
	return sandbox.Artifact{}, &Error{Kind: KindNotFound, Field: "name", Rule: "must name a chart or a file of an answer (its name in the answer)",
		Message: fmt.Sprintf("analysis %s has no chart or file %q", id, name)}
}

// servedFile is art as AnalysisFile serves it: content that is not text
// and holds a secret is KindWithheld, content over the artifact budget
// KindNotFound.
func servedFile(art sandbox.Artifact) (sandbox.Artifact, error) {
	switch {
	case art.Withheld != "":
		return art, &Error{Kind: KindWithheld, Field: "name", Rule: "must not name a binary file that holds a secret",
			Message: fmt.Sprintf("file %q: %s", art.Name, art.Withheld)}
	case art.ContentOmitted:
		return art, &Error{Kind: KindNotFound, Field: "name", Rule: "must name a file whose content was kept",
			Message: fmt.Sprintf("file %q was not kept: it did not fit in the question's artifact budget", art.Name)}
	}
	return art, nil
}

// artifact returns the chart or file of q's answer called name.
func (q *question) artifact(name string) (sandbox.Artifact, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.answer == nil {
		return sandbox.Artifact{}, false
	}
	for _, c := range q.answer.Charts {
		if c.Name == name {
			return c.Artifact, true
		}
	}
	for _, f := range q.answer.Files {
		if f.Name == name {
			return f, true
		}
	}
	return sandbox.Artifact{}, false
}
