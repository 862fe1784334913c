package swe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// refusingRuntime fails the test if a session is asked for: bad input
// must be refused before anything runs.
type refusingRuntime struct{ t *testing.T }

func (r refusingRuntime) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	r.t.Errorf("a session was started for bad input")
	return nil, errors.New("no session")
}

// noModel is a model that must never be called.
type noModel struct{ t *testing.T }

func (m noModel) Complete(context.Context, llm.Request) (llm.Reply, error) {
	m.t.Errorf("the model was called for bad input")
	return llm.Reply{}, errors.New("no model")
}
func (noModel) Name() string { return "none" }

// Bad input is an *sandbox.InputError naming the field and the rule,
// before any session starts or the model is asked.
func TestRunBadInput(t *testing.T) {
	good := Task{Repo: Repo{Archive: tarGz(t, map[string]string{"a.py": "x = 1\n"})}, Prompt: "fix it"}
	for _, tc := range []struct {
		name  string
		cfg   func(*Config)
		task  func(*Task)
		field string
		rule  string
	}{
		{"no model", func(c *Config) { c.Model = nil }, nil, "model", "must be set"},
		{"no sandbox", func(c *Config) { c.Sandbox = nil }, nil, "sandbox", "must be set"},
		{"negative steps", func(c *Config) { c.MaxSteps = -1 }, nil, "max_steps", "must not be negative"},
		{"negative tokens", func(c *Config) { c.MaxTokens = -5 }, nil, "max_tokens", "must not be negative"},
		{"negative wall time", func(c *Config) { c.MaxWallTime = -time.Second }, nil, "max_wall_ms", "must not be negative"},
		{"call timeout too long", func(c *Config) { c.CallTimeout = 2 * time.Hour }, nil, "call_timeout", "between 0"},
		{"empty task", nil, func(t *Task) { t.Prompt = "  " }, "task", "required"},
		{"no repository", nil, func(t *Task) { t.Repo.Archive = nil }, "repo.archive", ""},
		{"a test outside the repository", nil, func(t *Task) { t.Tests = []string{"../x.py::test_a"} }, "tests[0]", "inside the repository"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Model: noModel{t}, Sandbox: refusingRuntime{t}}
			task := good
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			if tc.task != nil {
				tc.task(&task)
			}
			res, err := Run(context.Background(), cfg, task)
			var ie *sandbox.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || !strings.Contains(ie.Rule, tc.rule) || res != nil {
				t.Errorf("Run = %v, %v; want an InputError on %s saying %q", res, err, tc.field, tc.rule)
			}
		})
	}
}
