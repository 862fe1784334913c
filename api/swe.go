package api

// AgentMode selects the agent of an agent run.
type AgentMode string

// The agents.
const (
	// ModeCode is the code agent (the default): a task becomes code whose
	// output answers it.
	ModeCode AgentMode = "code"
	// ModeSWE is the software-engineering agent: a repository and a task
	// become a change (a unified diff), verified by the tests in a fresh
	// sandbox. The request's Repo is required; TestCommand and Tests are
	// optional; Files, TestDriven and MaxRetries do not apply.
	ModeSWE AgentMode = "swe"
)

// SWERequest is the part of an AgentRunRequest only a swe run has.
type SWERequest struct {
	// Repo is the repository: a tar (optionally gzip'd) or a git bundle,
	// base64 in JSON. It is unpacked in the sandbox, never on the server.
	Repo *Repo `json:"repo,omitempty"`
	// TestCommand runs the tests from the repository's root ("" is
	// "python3 -m pytest -q").
	TestCommand string `json:"test_command,omitempty"`
	// Tests name the tests that must pass (pytest node IDs or files); a
	// change to their files is refused.
	Tests []string `json:"tests,omitempty"`
	// MaxSteps bounds the model's turns; MaxWallMS the whole run.
	MaxSteps  int   `json:"max_steps,omitempty"`
	MaxWallMS int64 `json:"max_wall_ms,omitempty"`
}

// SWEOutcome is what a swe run produced: the change and its tests, once
// the run ended (AgentRun.SWE). The run's Status is the swe.Status
// ("resolved", "unresolved", "tests_edited", ...).
type SWEOutcome struct {
	// Diff is the change, a unified diff against the input.
	Diff string `json:"diff"`
	// Before are the tests on the pristine repository; After on the
	// pristine repository with Diff applied, in a fresh sandbox: the
	// verdict.
	Before *TestReport `json:"before,omitempty"`
	After  *TestReport `json:"after,omitempty"`
	// FailToPass, PassToPass and Broken compare Before and After.
	FailToPass []string `json:"fail_to_pass,omitempty"`
	PassToPass []string `json:"pass_to_pass,omitempty"`
	Broken     []string `json:"broken,omitempty"`
	// TestEdits are the test files the diff changes.
	TestEdits []string `json:"test_edits,omitempty"`
	// Submitted says whether the model called submit.
	Submitted bool `json:"submitted"`
}
