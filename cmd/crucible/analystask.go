package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
)

// agentConfig is the service's agent configuration for `crucible
// analyst`'s questions: model answers them, and the flags' budgets are
// the maxima, so that what the flags ask for is what runs. A person at
// the terminal decides each approval: it waits up to a week.
func (s *agentSetup) agentConfig(model llm.Provider) service.AgentConfig {
	return service.AgentConfig{Model: model, ApprovalTimeout: 7 * 24 * time.Hour,
		Maxima: service.AgentBudgets{MaxRetries: s.maxRetries, CellTimeoutMS: s.timeout.Milliseconds()}}
}

// analystQuestions asks the questions of one analysis through the
// service, as every transport does, and shows their progress.
type analystQuestions struct {
	svc     *service.Service
	id      string // the analysis
	f       *analystFlags
	approve func(context.Context, string) (bool, error) // nil: no approvals asked
	d       *display
}

// ask asks question text and returns its answer, its charts and files
// with their contents, once it has ended; an input error names the flag
// or the question's field at fault.
func (q analystQuestions) ask(ctx context.Context, text string) (*service.AnalysisAnswer, error) {
	const tenant = server.DefaultTenant
	retries := q.f.maxRetries
	asked, err := q.svc.AskAnalysis(ctx, tenant, q.id, api.QuestionRequest{Question: text, MaxRetries: &retries,
		CellTimeoutMS: q.f.timeout.Milliseconds(), TextMode: q.f.textMode, Approve: q.approve != nil})
	if err != nil {
		return nil, err
	}
	events, err := q.svc.AnalysisQuestionEvents(ctx, tenant, q.id, asked.N, 0)
	if err != nil {
		return nil, err
	}
	progress := progressOn(q.d)
	for e := range events {
		if a := e.Agent; a != nil && a.Approval != nil && q.approve != nil {
			ok, err := q.approve(ctx, a.Approval.Code)
			reason := ""
			if err != nil {
				reason = err.Error()
			}
			if _, err := q.svc.DecideQuestionApproval(ctx, tenant, q.id, asked.N, a.Approval.ID, ok && err == nil, reason); err != nil {
				var se *service.Error
				if !errors.As(err, &se) || se.Kind != service.KindConflict { // a conflict: it timed out or the run ended
					return nil, err
				}
			}
		}
		progress(e)
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the analysis's deletion cancels the question
	}
	got, err := q.svc.AnalysisQuestion(ctx, tenant, q.id, asked.N)
	if err != nil {
		return nil, err
	}
	if got.Answer == nil {
		return nil, fmt.Errorf("question %d ended %s without an answer: %s", asked.N, got.Run.Status, got.Run.Reason)
	}
	var ans service.AnalysisAnswer
	if err := json.Unmarshal(got.Answer, &ans); err != nil {
		return nil, fmt.Errorf("read the answer of question %d: %w", asked.N, err)
	}
	for i := range ans.Charts {
		ans.Charts[i].Artifact = q.content(ctx, ans.Charts[i].Artifact, asked.N)
	}
	for i := range ans.Files {
		ans.Files[i] = q.content(ctx, ans.Files[i], asked.N)
	}
	return &ans, nil
}

// content returns a, a chart or file of question n's answer, with its
// content from the service; one the service withheld or left out stays
// without it, saying why.
func (q analystQuestions) content(ctx context.Context, a sandbox.Artifact, n int) sandbox.Artifact {
	if unsavedReason(a) != "" {
		return a
	}
	got, err := q.svc.AnalysisFile(ctx, server.DefaultTenant, q.id, a.Name, n)
	if err != nil && got.Name == "" {
		a.Withheld = err.Error()
		return a
	}
	return got
}
