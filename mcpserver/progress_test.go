package mcpserver

import (
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/service"
)

// TestAgentProgress: each event of a question's stream becomes one line
// of progress, the rebuild of an analysis's session included.
func TestAgentProgress(t *testing.T) {
	for _, tc := range []struct {
		e    service.Event
		want string
	}{
		{service.Event{Kind: service.EventStdout, Output: []byte("hi\n")}, "stdout: hi\n"},
		{service.Event{Kind: service.EventSessionRebuilt, Agent: &api.AgentEvent{Rebuild: &api.AnalysisRebuild{SessionID: "ses_1", Datasets: 1, Cells: 3, DurationMS: 812}}},
			"session rebuilt: 1 datasets loaded and 3 cells replayed in session ses_1 (812 ms)"},
		{service.Event{Kind: service.EventStep, Agent: &api.AgentEvent{Step: &api.AgentStep{Kind: "model", Attempt: 2, Message: "asking"}}}, "model (attempt 2): asking"},
		{service.Event{Kind: service.EventAnswer}, "answer"},
	} {
		if got := agentProgress(tc.e); got != tc.want {
			t.Errorf("agentProgress(%s) = %q, want %q", tc.e.Kind, got, tc.want)
		}
	}
}
