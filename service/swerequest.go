package service

import (
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/swe"
)

// checkMode refuses an agent run request whose mode is unknown, or that
// sets a field its mode does not use: a field that would be silently
// ignored is refused, naming it, so that a caller never believes a
// budget or a file applies when it does not.
func checkMode(req api.AgentRunRequest) error {
	switch req.Mode {
	case "", api.ModeCode:
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"repo", req.Repo != nil},
			{"test_command", req.TestCommand != ""},
			{"tests", req.Tests != nil},
			{"max_steps", req.MaxSteps != 0},
			{"max_wall_ms", req.MaxWallMS != 0},
		} {
			if f.set {
				return invalid(f.name, `applies to mode "swe" only; this run's mode is "code"`)
			}
		}
		return nil
	case api.ModeSWE:
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"files", req.Files != nil},
			{"test_driven", req.TestDriven},
			{"max_retries", req.MaxRetries != nil},
			{"max_exec_ms", req.MaxExecMS != 0},
			{"max_artifact_bytes", req.MaxArtifactBytes != 0},
		} {
			if f.set {
				return invalid(f.name, `does not apply to mode "swe" (the repository is its input; its budgets are max_steps, max_tokens, max_wall_ms and cell_timeout_ms)`)
			}
		}
		return nil
	default:
		return invalid("mode", `must be "code" (the default) or "swe", got %q`, req.Mode)
	}
}

// sweTask returns the task of the swe request req, checked by
// swe.Task.Validate (the repository's size and first bytes, the task, the
// test command, the tests) before anything runs. Only the archive's size
// and first bytes are checked: it is unpacked in the sandbox, never on
// the server, so whatever else is wrong with it (a bad entry, a bomb) is
// the sandbox's problem and the run's failure.
func sweTask(req api.AgentRunRequest) (swe.Task, error) {
	if req.Repo == nil {
		return swe.Task{}, invalid("repo", `is required in mode "swe": {"format": "tar" or "bundle", "archive": the repository as a (gzip'd) tar or a git bundle, base64}`)
	}
	task := swe.Task{Repo: *req.Repo, Prompt: req.Task, TestCommand: req.TestCommand, Tests: req.Tests}
	return task, task.Validate()
}
