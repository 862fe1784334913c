package service

import (
	"fmt"
	"time"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// AgentConfig configures the code-agent runs of a Service
// (Config.Agents). Zero fields take the documented defaults.
type AgentConfig struct {
	// Model writes the agents' code. The provider, its endpoint and key
	// are the server's: no request names them. Nil turns agent runs off:
	// they are refused with KindNotConfigured naming "model".
	Model llm.Provider
	// Maxima are the largest budgets a run may ask for; a zero field
	// takes DefaultAgentMaxima()'s, and CellTimeoutMS is at most the
	// server's maximum wall time (Config.Maxima).
	Maxima AgentBudgets
	// MaxRuns is how many agent runs may go on at once, all tenants
	// together (default DefaultMaxAgentRuns); each holds a session while
	// it works.
	MaxRuns int
	// ApprovalTimeout is how long a program may wait for a person's
	// approval; then the run ends denied (default
	// DefaultApprovalTimeout).
	ApprovalTimeout time.Duration
	// Retain is how many ended runs are kept in memory, with their
	// traces (default DefaultAgentRetain), and RetainFor for how long
	// (default DefaultAgentRetainFor); beyond, and after a restart, the
	// store serves them (Config.Store; without one, they are forgotten).
	Retain    int
	RetainFor time.Duration
}

// AgentBudgets are the budgets of an agent run, or their maxima.
type AgentBudgets struct {
	// MaxRetries is how many failed attempts may follow the first.
	MaxRetries int `json:"max_retries,omitempty"`
	// MaxTokens bounds the tokens of all model calls together.
	MaxTokens int `json:"max_tokens,omitempty"`
	// MaxExecMS bounds the execution time of all programs together.
	MaxExecMS int64 `json:"max_exec_ms,omitempty"`
	// CellTimeoutMS bounds one program.
	CellTimeoutMS int64 `json:"cell_timeout_ms,omitempty"`
	// MaxArtifactBytes bounds the artifacts of all programs together.
	MaxArtifactBytes int64 `json:"max_artifact_bytes,omitempty"`
	// MaxSteps bounds a swe run's model turns.
	MaxSteps int `json:"max_steps,omitempty"`
	// MaxWallMS bounds a swe run's wall time, its verification included.
	MaxWallMS int64 `json:"max_wall_ms,omitempty"`
}

// Defaults of AgentConfig's zero fields.
const (
	// DefaultMaxAgentRuns is AgentConfig.MaxRuns' default.
	DefaultMaxAgentRuns = 8
	// DefaultApprovalTimeout is AgentConfig.ApprovalTimeout's default.
	DefaultApprovalTimeout = 10 * time.Minute
	// DefaultAgentRetain is AgentConfig.Retain's default.
	DefaultAgentRetain = 64
	// DefaultAgentRetainFor is AgentConfig.RetainFor's default.
	DefaultAgentRetainFor = time.Hour
)

// DefaultAgentMaxima returns the budget maxima of AgentConfig.Maxima's
// zero fields; each call returns a value of its own.
func DefaultAgentMaxima() AgentBudgets {
	return AgentBudgets{
		MaxRetries:       10,
		MaxTokens:        1_000_000,
		MaxExecMS:        (30 * time.Minute).Milliseconds(),
		CellTimeoutMS:    (10 * time.Minute).Milliseconds(),
		MaxArtifactBytes: 256 << 20,
		MaxSteps:         250,
		MaxWallMS:        (2 * time.Hour).Milliseconds(),
	}
}

// withDefaults checks c and fills in its zero fields; wallTimeMS is the
// server's maximum wall time, which bounds a cell.
func (c AgentConfig) withDefaults(wallTimeMS int64) (AgentConfig, error) {
	m := c.Maxima
	if c.MaxRuns < 0 || c.ApprovalTimeout < 0 || c.Retain < 0 || c.RetainFor < 0 || m.MaxRetries < 0 || m.MaxTokens < 0 ||
		m.MaxExecMS < 0 || m.CellTimeoutMS < 0 || m.MaxArtifactBytes < 0 || m.MaxSteps < 0 || m.MaxWallMS < 0 {
		return c, fmt.Errorf("service: Config.Agents: limits must not be negative")
	}
	d := DefaultAgentMaxima()
	c.Maxima = AgentBudgets{
		MaxRetries:       or(m.MaxRetries, d.MaxRetries),
		MaxTokens:        or(m.MaxTokens, d.MaxTokens),
		MaxExecMS:        or(m.MaxExecMS, d.MaxExecMS),
		CellTimeoutMS:    min(or(m.CellTimeoutMS, d.CellTimeoutMS), wallTimeMS),
		MaxArtifactBytes: or(m.MaxArtifactBytes, d.MaxArtifactBytes),
		MaxSteps:         or(m.MaxSteps, d.MaxSteps),
		MaxWallMS:        or(m.MaxWallMS, d.MaxWallMS),
	}
	c.MaxRuns = or(c.MaxRuns, DefaultMaxAgentRuns)
	c.ApprovalTimeout = or(c.ApprovalTimeout, DefaultApprovalTimeout)
	c.Retain = or(c.Retain, DefaultAgentRetain)
	c.RetainFor = or(c.RetainFor, DefaultAgentRetainFor)
	return c, nil
}

// or is v, or d when v is zero.
func or[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// agentConfig turns req's budgets into an agent's Config: a zero budget
// is the agent's default lowered to the server's maximum, a budget above
// the maximum is an input error naming its field.
func (s *Service) agentConfig(req api.AgentRunRequest) (agent.Config, error) {
	m := s.cfg.Agents.Maxima
	retries := min(agent.DefaultMaxRetries, m.MaxRetries)
	if req.MaxRetries != nil {
		retries = *req.MaxRetries
	}
	for _, b := range []struct {
		field  string
		v, max int64
		unit   string
	}{
		{"max_retries", int64(retries), int64(m.MaxRetries), ""},
		{"max_tokens", int64(req.MaxTokens), int64(m.MaxTokens), " tokens"},
		{"max_exec_ms", req.MaxExecMS, m.MaxExecMS, " ms"},
		{"cell_timeout_ms", req.CellTimeoutMS, m.CellTimeoutMS, " ms"},
		{"max_artifact_bytes", req.MaxArtifactBytes, m.MaxArtifactBytes, " bytes"},
	} {
		switch {
		case b.v < 0:
			return agent.Config{}, invalid(b.field, "must not be negative, got %d", b.v)
		case b.v > b.max:
			return agent.Config{}, invalid(b.field, "must be at most %d%s on this server, got %d", b.max, b.unit, b.v)
		}
	}
	if retries == 0 {
		retries = agent.NoRetries // zero means none here, not the default
	}
	return agent.Config{
		MaxRetries:       retries,
		MaxTokens:        or(req.MaxTokens, min(agent.DefaultMaxTokens, m.MaxTokens)),
		MaxExecTime:      time.Duration(or(req.MaxExecMS, min(agent.DefaultMaxExecTime.Milliseconds(), m.MaxExecMS))) * time.Millisecond,
		CellTimeout:      time.Duration(or(req.CellTimeoutMS, min(agent.DefaultCellTimeout.Milliseconds(), m.CellTimeoutMS))) * time.Millisecond,
		MaxArtifactBytes: or(req.MaxArtifactBytes, min(agent.DefaultMaxArtifactBytes, m.MaxArtifactBytes)),
		TextMode:         req.TextMode,
		TestDriven:       req.TestDriven,
	}, nil
}

// agentSession validates what the session of req will be: its files,
// its image and its limits, within the server's maxima, their defaults
// lowered to them; a program's wall and CPU time default to the cell
// timeout, as for `crucible agent`.
func (s *Service) agentSession(req api.AgentRunRequest, cellTimeout time.Duration) (sandbox.SessionRequest, *Image, error) {
	sreq := sandbox.SessionRequest{Language: sandbox.Python, Files: req.Files, Limits: req.Limits}
	if err := sreq.Validate(); err != nil {
		return sreq, nil, err
	}
	img, err := s.sessionImageNamed(req.Image)
	if err != nil {
		return sreq, nil, err
	}
	if err := sreq.Limits.Within(s.cfg.Maxima); err != nil {
		return sreq, nil, err
	}
	ms := cellTimeout.Milliseconds()
	sreq.Limits.WallTimeMS = or(sreq.Limits.WallTimeMS, ms)
	sreq.Limits.CPUTimeMS = or(sreq.Limits.CPUTimeMS, min(ms, s.cfg.Maxima.CPUTimeMS))
	sreq.Limits = sreq.Limits.DefaultsWithin(s.cfg.Maxima)
	sreq.Image = img.Name
	return sreq, img, nil
}
