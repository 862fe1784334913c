package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/swe"
)

// SWEInput is the swe tool's input: a repository as an archive, and the
// task. The repository is bytes the client sends, never a path: over
// HTTP a path would name the server host's files, which no client may
// read; over stdio it would let the client's model hand any file the
// user can read to the server's model. A client that has a directory
// packs it (tar czf - -C dir . | base64, or crucible swe, which reads a
// local directory itself).
type SWEInput struct {
	Task          string   `json:"task" jsonschema:"what to do, in plain language, such as: fix the failing test in tests/test_x.py"`
	Archive       string   `json:"archive" jsonschema:"the repository in standard base64: a tar, a gzip'd tar (tar czf - -C repo .) or a git bundle (git bundle create - --all); at most 64 MiB before base64"`
	Format        string   `json:"format,omitempty" jsonschema:"tar or bundle; omit to detect it from the archive"`
	TestCommand   string   `json:"test_command,omitempty" jsonschema:"runs the tests from the repository's root, through bash; omit for python3 -m pytest -q"`
	Tests         []string `json:"tests,omitempty" jsonschema:"the tests that must pass after the change (pytest node IDs such as tests/test_x.py::test_y, or test files); omit for every test the command runs; a change to their files is refused"`
	Image         string   `json:"image,omitempty" jsonschema:"the image to work in; it needs bash, git and patch (and pytest for the default test command); omit for the server's default"`
	MaxSteps      int      `json:"max_steps,omitempty" jsonschema:"the model's turns; omit for the server's default"`
	MaxTokens     int      `json:"max_tokens,omitempty" jsonschema:"tokens of all the model's calls; omit for the server's default"`
	MaxWallMS     int64    `json:"max_wall_ms,omitempty" jsonschema:"wall time of the whole run in milliseconds, its verification included; omit for the server's default"`
	CellTimeoutMS int64    `json:"cell_timeout_ms,omitempty" jsonschema:"wall time of one command or test run in milliseconds; omit for the server's default"`
	TextMode      bool     `json:"text_mode,omitempty" jsonschema:"have the agent's model write its tool calls as text (for models without tool calling)"`
}

// SWEOutput is how a swe run ended: its verdict, its change and its
// tests.
type SWEOutput struct {
	Run        string       `json:"run" jsonschema:"the agent run's ID (GET /v1/agent-runs/{id} serves it, with its trace)"`
	Status     string       `json:"status" jsonschema:"resolved (the change, applied to a pristine copy in a fresh sandbox, makes the tests pass), unresolved, tests_edited, no_change, budget_exhausted, looping, refused, denied, failed or cancelled"`
	Reason     string       `json:"reason,omitempty" jsonschema:"why, in words"`
	Diff       string       `json:"diff" jsonschema:"the change, a unified diff against the repository (apply it with git apply)"`
	Before     *TestsOutput `json:"before,omitempty" jsonschema:"the tests on the repository as it was"`
	After      *TestsOutput `json:"after,omitempty" jsonschema:"the tests on a pristine copy with the diff applied, in a fresh sandbox: the verdict"`
	FailToPass []string     `json:"fail_to_pass,omitempty" jsonschema:"tests that failed before and pass after"`
	Broken     []string     `json:"broken,omitempty" jsonschema:"tests that passed before and fail after"`
	TestEdits  []string     `json:"test_edits,omitempty" jsonschema:"test files the diff changes"`
	Submitted  bool         `json:"submitted" jsonschema:"whether the agent submitted its change (else its budget ran out first)"`
}

// TestsOutput is one run of the tests, as a tool answers it.
type TestsOutput struct {
	Command    string   `json:"command" jsonschema:"what ran"`
	Status     string   `json:"status" jsonschema:"the sandbox's status: ok, timeout, ..."`
	ExitCode   int      `json:"exit_code" jsonschema:"the command's exit code"`
	Passed     int      `json:"passed" jsonschema:"tests that passed"`
	Failed     int      `json:"failed" jsonschema:"tests that failed or errored"`
	FailedIDs  []string `json:"failed_ids,omitempty" jsonschema:"the failed tests' IDs"`
	Applied    string   `json:"applied,omitempty" jsonschema:"how the change was applied: git apply or patch --fuzz"`
	ApplyError string   `json:"apply_error,omitempty" jsonschema:"why the change did not apply"`
}

const sweDescription = `Have Crucible's software-engineering agent change a repository: it works in an isolated
sandbox (no network) on a copy of the repository you send, with bash, a file viewer and editor,
search and the tests, and submits a change. The change is then applied to a pristine copy in a
fresh sandbox and the tests run there: the status (resolved or not) is that verdict, never the
agent's claim. Returns the status, the unified diff, and the tests before and after. Progress
notifications say what the agent does. Needs a model configured on the server.`

// addSWETools adds swe.
func (h *handlers) addSWETools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "swe", Title: "Change a repository with the software-engineering agent", Description: sweDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false)}}, h.swe)
}

func (h *handlers) swe(ctx context.Context, req *mcp.CallToolRequest, in SWEInput) (*mcp.CallToolResult, SWEOutput, error) {
	archive, err := base64.StdEncoding.DecodeString(in.Archive)
	if err != nil {
		return nil, SWEOutput{}, &sandbox.InputError{Field: "archive", Rule: fmt.Sprintf("must be standard base64: %v", err)}
	}
	areq := api.AgentRunRequest{Task: in.Task, Image: in.Image, Mode: api.ModeSWE, TextMode: in.TextMode,
		MaxTokens: in.MaxTokens, CellTimeoutMS: in.CellTimeoutMS,
		SWERequest: api.SWERequest{Repo: &swe.Repo{Format: swe.RepoFormat(in.Format), Archive: archive},
			TestCommand: in.TestCommand, Tests: in.Tests, MaxSteps: in.MaxSteps, MaxWallMS: in.MaxWallMS}}
	p := newProgress(ctx, req)
	var end *api.AgentRun
	err = h.svc.StreamAgentRun(ctx, h.tenant, areq, nil, func(e service.Event) bool {
		if e.Kind == service.EventResult && e.Agent != nil {
			end = e.Agent.Run
		}
		p.send(sweProgress(e))
		return true
	})
	p.stop()
	if err != nil {
		return nil, SWEOutput{}, renameSWEField(err)
	}
	if end == nil {
		if ctx.Err() != nil {
			return nil, SWEOutput{}, ctx.Err()
		}
		return nil, SWEOutput{}, fmt.Errorf("the swe run ended without a result event")
	}
	out := sweOutput(end)
	// Any verdict is the tool's answer; only a run that failed (the
	// model or the platform) is an error.
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: sweText(out)}},
		IsError: out.Status == string(swe.StatusFailed)}, out, nil
}

// sweProgress says in a line what an event of a swe run tells: as
// agentProgress does, a step numbered by the model's turn.
func sweProgress(e service.Event) string {
	if e.Agent != nil && e.Agent.Step != nil {
		return fmt.Sprintf("%s (step %d): %s", e.Agent.Step.Kind, e.Agent.Step.Attempt, e.Agent.Step.Message)
	}
	return agentProgress(e)
}

// renameSWEField names the tool's field for an input error of the
// request it made: repo.archive and repo.format are archive and format.
func renameSWEField(err error) error {
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, "repo") {
		return err
	}
	renamed := *ie
	renamed.Field = strings.TrimPrefix(strings.TrimPrefix(ie.Field, "repo"), ".")
	if renamed.Field == "" {
		renamed.Field = "archive"
	}
	return &renamed
}

// sweOutput is the tool's output for the ended run.
func sweOutput(run *api.AgentRun) SWEOutput {
	out := SWEOutput{Run: run.ID, Status: string(run.Status), Reason: run.Reason}
	if o := run.SWE; o != nil {
		out.Diff, out.FailToPass, out.Broken, out.TestEdits, out.Submitted = o.Diff, o.FailToPass, o.Broken, o.TestEdits, o.Submitted
		out.Before, out.After = testsOutput(o.Before), testsOutput(o.After)
	}
	return out
}

// testsOutput is r as the tool answers it; nil for nil.
func testsOutput(r *swe.TestReport) *TestsOutput {
	if r == nil {
		return nil
	}
	t := &TestsOutput{Command: r.Command, Status: string(r.Status), ExitCode: r.ExitCode, Passed: r.Passed, Failed: r.Failed,
		Applied: r.Applied, ApplyError: r.ApplyError}
	for _, c := range r.Cases {
		if c.Outcome == swe.TestFailed || c.Outcome == swe.TestMissing {
			t.FailedIDs = append(t.FailedIDs, c.ID)
		}
	}
	return t
}

// sweText is what a model reads of a swe run's end.
func sweText(o SWEOutput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s\nrun: %s\n", o.Status, o.Run)
	if o.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", o.Reason)
	}
	for _, t := range []struct {
		name string
		r    *TestsOutput
	}{{"tests before", o.Before}, {"tests after (fresh sandbox, diff applied)", o.After}} {
		if t.r == nil {
			continue
		}
		fmt.Fprintf(&b, "%s: %d passed, %d failed (%s, exit code %d)", t.name, t.r.Passed, t.r.Failed, t.r.Status, t.r.ExitCode)
		if t.r.ApplyError != "" {
			fmt.Fprintf(&b, "; the diff did not apply: %s", t.r.ApplyError)
		}
		if len(t.r.FailedIDs) > 0 {
			fmt.Fprintf(&b, "; failed: %s", strings.Join(t.r.FailedIDs, ", "))
		}
		b.WriteString("\n")
	}
	for _, l := range []struct {
		name string
		ids  []string
	}{{"fail to pass", o.FailToPass}, {"broken", o.Broken}, {"test files edited", o.TestEdits}} {
		if len(l.ids) > 0 {
			fmt.Fprintf(&b, "%s: %s\n", l.name, strings.Join(l.ids, ", "))
		}
	}
	if o.Diff == "" {
		b.WriteString("diff: (none)\n")
	} else {
		fmt.Fprintf(&b, "diff:\n%s", o.Diff)
		if !strings.HasSuffix(o.Diff, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}
