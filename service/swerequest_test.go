package service_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/swe"
)

// TestAgentRunModeRefusals: a bad mode, a field the run's mode does not
// use, a swe run's missing or bad repository, test command or tests, and
// a swe budget above the server's maximum are each refused before
// anything runs, naming the field; nothing is left admitted.
func TestAgentRunModeRefusals(t *testing.T) {
	ctx := context.Background()
	svc := agentService(t, sweModel(t, llmtest.Call{Name: "submit", Args: map[string]string{}}), func(c *service.Config) {
		c.Agents.Maxima = service.AgentBudgets{MaxSteps: 10, MaxWallMS: 60_000, MaxTokens: 1000, CellTimeoutMS: 5000}
	})
	tgz := tarGz(t, bugRepo)
	repo := func(archive []byte, format swe.RepoFormat) *swe.Repo {
		return &swe.Repo{Archive: archive, Format: format}
	}
	sw := func(change func(*api.AgentRunRequest)) api.AgentRunRequest {
		r := api.AgentRunRequest{Task: "fix it", Mode: api.ModeSWE, SWERequest: api.SWERequest{Repo: repo(tgz, "")}}
		change(&r)
		return r
	}
	code := func(change func(*api.AgentRunRequest)) api.AgentRunRequest {
		r := api.AgentRunRequest{Task: "compute"}
		change(&r)
		return r
	}
	one := 1
	for _, tc := range []struct {
		name  string
		req   api.AgentRunRequest
		field string
	}{
		{"unknown mode", code(func(r *api.AgentRunRequest) { r.Mode = "sql" }), "mode"},
		{"code with repo", code(func(r *api.AgentRunRequest) { r.Repo = repo(tgz, "") }), "repo"},
		{"code with tests", code(func(r *api.AgentRunRequest) { r.Tests = []string{"test_calc.py"} }), "tests"},
		{"code with test_command", code(func(r *api.AgentRunRequest) { r.TestCommand = "make test" }), "test_command"},
		{"code with max_steps", code(func(r *api.AgentRunRequest) { r.Mode, r.MaxSteps = api.ModeCode, 3 }), "max_steps"},
		{"code with max_wall_ms", code(func(r *api.AgentRunRequest) { r.MaxWallMS = 3 }), "max_wall_ms"},
		{"swe without repo", sw(func(r *api.AgentRunRequest) { r.Repo = nil }), "repo"},
		{"swe without task", sw(func(r *api.AgentRunRequest) { r.Task = " " }), "task"},
		{"swe with files", sw(func(r *api.AgentRunRequest) { r.Files = []sandbox.File{{Name: "a", Content: []byte("x")}} }), "files"},
		{"swe test_driven", sw(func(r *api.AgentRunRequest) { r.TestDriven = true }), "test_driven"},
		{"swe max_retries", sw(func(r *api.AgentRunRequest) { r.MaxRetries = &one }), "max_retries"},
		{"swe max_exec_ms", sw(func(r *api.AgentRunRequest) { r.MaxExecMS = 1 }), "max_exec_ms"},
		{"empty archive", sw(func(r *api.AgentRunRequest) { r.Repo = repo(nil, "") }), "repo.archive"},
		{"archive over the maximum", sw(func(r *api.AgentRunRequest) { r.Repo = repo(make([]byte, swe.MaxRepoBytes+1), "") }), "repo.archive"},
		{"not an archive", sw(func(r *api.AgentRunRequest) { r.Repo = repo(bytes.Repeat([]byte("not a tar "), 200), "") }), "repo.archive"},
		{"unknown format", sw(func(r *api.AgentRunRequest) { r.Repo = repo(tgz, "zip") }), "repo.format"},
		{"a tar said to be a bundle", sw(func(r *api.AgentRunRequest) { r.Repo = repo(tgz, swe.RepoBundle) }), "repo.format"},
		{"a bundle said to be a tar", sw(func(r *api.AgentRunRequest) { r.Repo = repo([]byte("# v2 git bundle\nabc"), swe.RepoTar) }), "repo.format"},
		{"task over the maximum", sw(func(r *api.AgentRunRequest) { r.Task = string(bytes.Repeat([]byte("a"), swe.MaxTaskBytes+1)) }), "task"},
		{"task with NUL", sw(func(r *api.AgentRunRequest) { r.Task = "fix\x00it" }), "task"},
		{"test command with NUL", sw(func(r *api.AgentRunRequest) { r.TestCommand = "pytest\x00" }), "test_command"},
		{"too many tests", sw(func(r *api.AgentRunRequest) { r.Tests = make([]string, swe.MaxTests+1) }), "tests"},
		{"absolute test", sw(func(r *api.AgentRunRequest) { r.Tests = []string{"test_calc.py", "/etc/passwd"} }), "tests[1]"},
		{"test out of the repo", sw(func(r *api.AgentRunRequest) { r.Tests = []string{"../x.py::t"} }), "tests[0]"},
		{"max_steps over", sw(func(r *api.AgentRunRequest) { r.MaxSteps = 11 }), "max_steps"},
		{"max_wall_ms over", sw(func(r *api.AgentRunRequest) { r.MaxWallMS = 60_001 }), "max_wall_ms"},
		{"max_tokens over", sw(func(r *api.AgentRunRequest) { r.MaxTokens = 1001 }), "max_tokens"},
		{"cell_timeout_ms over", sw(func(r *api.AgentRunRequest) { r.CellTimeoutMS = 5001 }), "cell_timeout_ms"},
		{"max_steps negative", sw(func(r *api.AgentRunRequest) { r.MaxSteps = -1 }), "max_steps"},
		{"unknown image", sw(func(r *api.AgentRunRequest) { r.Image = "nope" }), "image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.StartAgentRun(ctx, "acme", tc.req, nil)
			var ie *sandbox.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || ie.Rule == "" {
				t.Fatalf("StartAgentRun: %v, want an input error naming %q with its rule", err, tc.field)
			}
		})
	}
	if list, _, err := svc.AgentRuns(ctx, "acme", service.AgentRunPage{}); err != nil || len(list) != 0 {
		t.Errorf("after the refusals %d runs are listed (%v), want none", len(list), err)
	}
}
