package service_test

import (
	"context"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// TestAnalysisUnderBlockPolicy proves the code policy checks the model's
// code of an analysis, never the analyst's own (its helpers and profiler
// use exec, compile and globals): under a server policy of block, an
// analysis opens and profiles its data, a question whose first program
// imports os is blocked, its findings fed back, and the rewritten program
// answers. The model is scripted (llmtest: no model can run here).
func TestAnalysisUnderBlockPolicy(t *testing.T) {
	ctx := context.Background()
	strict := newService(t, dataScienceRuntime(t), func(c *service.Config) {
		c.Agents.Model = scriptedModel(t, "the total is 400", "import os\nprint(os.getcwd())", "print('total', df['charges'].sum())")
		c.Policy = sandbox.Policy{Mode: sandbox.PolicyBlock}
	})
	a, err := strict.CreateAnalysis(ctx, "acme", service.AnalysisSpec{Datasets: []analyst.Dataset{{Name: "insurance.csv", Content: []byte("charges\n100\n300\n")}}}, nil)
	if err != nil {
		t.Fatalf("CreateAnalysis under block: %v", err)
	}
	if _, err := strict.AskAnalysis(ctx, "acme", a.ID, api.QuestionRequest{Question: "What is the total charge?", TextMode: true}); err != nil {
		t.Fatal(err)
	}
	followQuestion(t, strict, "acme", a.ID, 1, nil)
	q, err := strict.AnalysisQuestion(ctx, "acme", a.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if q.Run.Status != api.AgentRunStatus(agent.StatusAnswered) {
		t.Fatalf("question ended %s (%s)", q.Run.Status, q.Run.Reason)
	}
	runs, _, err := strict.List(ctx, "acme", store.Filter{SessionID: a.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	var blocked, ok int
	for _, r := range runs {
		switch {
		case r.Status == sandbox.StatusBlocked && len(r.Findings) == 1 && r.Findings[0].Snippet == "import os":
			blocked++
		case r.Status == sandbox.StatusOK && len(r.Findings) > 0:
			t.Errorf("a cell that ran has findings: %q %+v", r.Code, r.Findings)
		case r.Status == sandbox.StatusOK:
			ok++
		}
	}
	if blocked != 1 || ok == 0 {
		t.Errorf("%d blocked cells and %d run, want 1 blocked (the model's import os) and the others run", blocked, ok)
	}
}
