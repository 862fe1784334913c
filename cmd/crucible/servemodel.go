package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/service"
)

// modelConfig is the "model" of `crucible serve --config`: the model the
// server's agents use. Its fields override the environment's
// (llm.ConfigFromEnv); the key is never in a request or a record.
type modelConfig struct {
	// Provider is "openai" (any OpenAI-compatible endpoint) or
	// "anthropic".
	Provider string `json:"provider"`
	// Model names the model.
	Model string `json:"model"`
	// BaseURL is the provider's endpoint, such as
	// "http://localhost:11434/v1" for Ollama.
	BaseURL string `json:"base_url"`
	// APIKey is the key itself; APIKeyEnv names the environment variable
	// that holds it instead (better: the file then holds no secret).
	APIKey    string `json:"api_key"`
	APIKeyEnv string `json:"api_key_env"`
}

// agentsConfig is the "agents" of `crucible serve --config`: the limits
// of the agent runs (service.AgentConfig).
type agentsConfig struct {
	// MaxRuns caps the agent runs going on, all tenants together.
	MaxRuns int `json:"max_runs"`
	// ApprovalTimeout is how long a program waits for approval, as a Go
	// duration.
	ApprovalTimeout string `json:"approval_timeout"`
	// Retain and RetainFor bound the ended runs kept in memory; the
	// store keeps them all.
	Retain    int    `json:"retain"`
	RetainFor string `json:"retain_for"`
	// Maxima cap the budgets a request may ask for.
	Maxima service.AgentBudgets `json:"maxima"`
}

// serverModel returns the model of the server's agents: the environment's
// (llm.ConfigFromEnv) with the file's "model" over it, or ok false when
// neither names a model (the server then runs no agents). Errors name the
// field.
func serverModel(m *modelConfig) (cfg llm.Config, ok bool, err error) {
	cfg = llm.ConfigFromEnv()
	if m != nil {
		if m.APIKey != "" && m.APIKeyEnv != "" {
			return cfg, false, fmt.Errorf(`model: api_key and api_key_env exclude each other: give one`)
		}
		if m.Provider != "" && m.Provider != cfg.Provider {
			// The environment's key and URL are another provider's.
			cfg = llm.Config{Provider: strings.ToLower(m.Provider), Model: cfg.Model}
		}
		cfg.Model = or(m.Model, cfg.Model)
		cfg.BaseURL = or(m.BaseURL, cfg.BaseURL)
		cfg.APIKey = or(m.APIKey, cfg.APIKey)
		if m.APIKeyEnv != "" {
			if cfg.APIKey = strings.TrimSpace(os.Getenv(m.APIKeyEnv)); cfg.APIKey == "" {
				return cfg, false, fmt.Errorf("model: api_key_env: the environment variable %s is empty or unset", m.APIKeyEnv)
			}
		}
	}
	if cfg.Model == "" {
		return cfg, false, nil
	}
	if err := cfg.Validate(); err != nil {
		return cfg, false, fmt.Errorf("model: %w", err)
	}
	return cfg, true, nil
}

// or is v, or d when v is "".
func or(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// apply sets agents' limits into cfg; errors name the field.
func (a *agentsConfig) apply(cfg *service.AgentConfig) error {
	if a == nil {
		return nil
	}
	cfg.MaxRuns, cfg.Retain, cfg.Maxima = a.MaxRuns, a.Retain, a.Maxima
	for _, d := range []struct {
		name, value string
		into        *time.Duration
	}{{"approval_timeout", a.ApprovalTimeout, &cfg.ApprovalTimeout}, {"retain_for", a.RetainFor, &cfg.RetainFor}} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil || v <= 0 {
			return fmt.Errorf("agents: %s must be a positive duration such as \"10m\", got %q", d.name, d.value)
		}
		*d.into = v
	}
	return nil
}

// withModelKey adds the model's key to the secrets rc hides, when it is
// long enough to redact: no program can know it, but were it to appear
// in an output or a trace, it would not be shown.
func withModelKey(rc policy.RedactConfig, key string) policy.RedactConfig {
	if len(key) >= policy.MinSecretLen {
		rc.Secrets = append(rc.Secrets, key)
	}
	return rc
}
