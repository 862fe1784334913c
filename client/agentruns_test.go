package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/service"
)

// TestAgentRunSDK drives agent runs through the SDK against a real server
// and sandbox (root), with a scripted model: a local server speaking the
// OpenAI wire format from a script (llmtest.OpenAI), as no model can run
// here. One run's program is approved from the approval event and
// answers with its live output; another's is refused and ends denied; a
// third is cancelled while it waits.
func TestAgentRunSDK(t *testing.T) {
	srv := llmtest.OpenAI(t, llmtest.Script{Codes: []string{"print(6*7)"}, Answer: "42"})
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, func(cfg *service.Config) { cfg.Agents.Model = model })
	ctx := context.Background()
	task := api.AgentRunRequest{Task: "what is 6 times 7?", TextMode: true, Approve: true}

	for _, tc := range []struct {
		name       string
		approve    bool
		wantStatus api.AgentRunStatus
		wantOutput string
	}{
		{"approved", true, "answered", "42\n"},
		{"refused", false, "denied", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := c.StartAgentRun(ctx, task)
			if err != nil {
				t.Fatal(err)
			}
			var output strings.Builder
			var kinds []string
			end, err := c.FollowAgentRun(ctx, run.ID, func(e client.AgentEvent) {
				kinds = append(kinds, e.Kind)
				switch e.Kind {
				case "approval":
					if _, err := c.Approve(ctx, run.ID, e.Approval.ID, tc.approve, "decided by the test"); err != nil {
						t.Errorf("Approve: %v", err)
					}
				case "stdout":
					output.Write(e.Output)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if end.Status != tc.wantStatus || output.String() != tc.wantOutput || len(end.Trace) == 0 {
				t.Errorf("ended %s with output %q (events %v), want %s with %q and a trace", end.Status, output.String(), kinds, tc.wantStatus, tc.wantOutput)
			}
			if tc.wantStatus == "denied" && !strings.Contains(end.Reason, "decided by the test") {
				t.Errorf("reason %q lacks the refusal's", end.Reason)
			}
			got, err := c.GetAgentRun(ctx, run.ID)
			if err != nil || got.Status != tc.wantStatus || string(got.Trace) != string(end.Trace) {
				t.Errorf("GetAgentRun: %v; status %s, trace of %d bytes; want %s and the trace the result event had", err, got.Status, len(got.Trace), tc.wantStatus)
			}
		})
	}

	run, err := c.StartAgentRun(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	var approval string
	fctx, stop := context.WithCancel(ctx)
	_, _ = c.FollowAgentRun(fctx, run.ID, func(e client.AgentEvent) {
		if e.Kind == "approval" {
			approval = e.Approval.ID
			stop()
		}
	})
	ended, err := c.CancelAgentRun(ctx, run.ID)
	if err != nil || ended.Status != api.AgentCancelled {
		t.Fatalf("CancelAgentRun = %+v, %v", ended, err)
	}
	var apiErr *client.APIError
	if _, err := c.Approve(ctx, run.ID, approval, true, ""); !errors.As(err, &apiErr) || apiErr.Status != 409 {
		t.Errorf("approving after the cancel: %v, want 409", err)
	}
	list, err := c.ListAgentRuns(ctx)
	if err != nil || len(list) != 3 || list[0].ID != run.ID {
		t.Errorf("ListAgentRuns = %+v, %v; want the 3 runs, newest first", list, err)
	}
	if _, err := c.GetAgentRun(ctx, "agt_0000000000000000"); !client.IsNotFound(err) {
		t.Errorf("an unknown run: %v, want 404", err)
	}
}
