package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// serveConfig is the JSON file `crucible serve --config FILE` reads. Every
// field is optional; unknown fields are refused, so a misspelt limit is an
// error instead of silently not applying.
type serveConfig struct {
	// MaxConcurrent is how many runs execute at once (default: twice the
	// CPUs).
	MaxConcurrent int `json:"max_concurrent"`
	// MaxQueue is how many admitted runs may wait (default 64).
	MaxQueue int `json:"max_queue"`
	// MaxSessions caps the open sessions of all tenants (default 16).
	MaxSessions int `json:"max_sessions"`
	// MaxBodyBytes caps a request body (default 64 MiB).
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// MaxPayloadBytes caps the request bodies held at once (default
	// service.DefaultPayloadFactor, 2, times max_body_bytes).
	MaxPayloadBytes int64 `json:"max_payload_bytes"`
	// BodyTimeout is how long a request body may take to arrive, as a Go
	// duration (default 30s).
	BodyTimeout string `json:"body_timeout"`
	// IdleTimeout closes keep-alive connections idle that long, as a Go
	// duration (default 2m).
	IdleTimeout string `json:"idle_timeout"`
	// CacheTTL is how long results stay cached for the runs that ask for
	// the cache, as a Go duration (default "10m"); "0" turns the cache off.
	CacheTTL *string `json:"cache_ttl"`
	// Maxima are the largest limits a request may ask for (default: what
	// the host can hold).
	Maxima sandbox.Limits `json:"maxima"`
	// Redact configures output redaction; Patterns defaults to true.
	Redact *redactConfig `json:"redact"`
	// cacheTTL, bodyTimeout and idleTimeout are CacheTTL, BodyTimeout and
	// IdleTimeout parsed.
	cacheTTL, bodyTimeout, idleTimeout time.Duration
	// TenantDefaults are the limits of every tenant not in Tenants (zero
	// fields: a fair share of the server's).
	TenantDefaults service.TenantLimits `json:"tenant_defaults"`
	// Tenants are limits of particular tenants (zero fields: the
	// defaults).
	Tenants map[string]service.TenantLimits `json:"tenants"`
	// UIDBase and UIDCount are the host uids reserved for sandboxes, one
	// per live sandbox (default linux.DefaultUIDBase and
	// linux.DefaultUIDCount; see linux.Options).
	UIDBase  int `json:"uid_base"`
	UIDCount int `json:"uid_count"`
	// Model is the model of the server's agents (over the environment's).
	Model *modelConfig `json:"model"`
	// Agents are the limits of the agent runs.
	Agents *agentsConfig `json:"agents"`
	// agents is Agents parsed.
	agents service.AgentConfig
	// Policy is the server's static code policy: a mode ("warn") or
	// {"mode": ..., "preset": ...} (default off; agents' code at least
	// warn). Tenants tighten it with "policy" in their entry.
	Policy *sandbox.Policy `json:"policy"`
	// Runtime is the runtime of every image, as --runtime names it
	// (native, docker or gvisor), and DockerImage a local Docker image to
	// offer, as --docker-image; the flags, when given, win.
	Runtime     string `json:"runtime"`
	DockerImage string `json:"docker_image"`
}

// redactConfig is policy.RedactConfig in the file's snake_case.
type redactConfig struct {
	Patterns  *bool    `json:"patterns"`
	Secrets   []string `json:"secrets"`
	HostPaths []string `json:"host_paths"`
	Extra     []string `json:"extra"`
}

// loadServeConfig reads and checks the file at path; "" is the defaults.
// Errors name the file and the field.
func loadServeConfig(path string) (*serveConfig, error) {
	c := &serveConfig{cacheTTL: defaultCacheTTL}
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("--config %s: must hold one JSON object and nothing after it", path)
	}
	switch {
	case c.MaxConcurrent < 0:
		return nil, fmt.Errorf("--config %s: max_concurrent must not be negative, got %d", path, c.MaxConcurrent)
	case c.MaxQueue < 0:
		return nil, fmt.Errorf("--config %s: max_queue must not be negative, got %d", path, c.MaxQueue)
	case c.MaxSessions < 0:
		return nil, fmt.Errorf("--config %s: max_sessions must not be negative, got %d", path, c.MaxSessions)
	case c.MaxBodyBytes < 0:
		return nil, fmt.Errorf("--config %s: max_body_bytes must not be negative, got %d", path, c.MaxBodyBytes)
	case c.MaxPayloadBytes < 0:
		return nil, fmt.Errorf("--config %s: max_payload_bytes must not be negative, got %d", path, c.MaxPayloadBytes)
	}
	if c.Runtime != "" {
		if err := checkRuntimeName(c.Runtime); err != nil {
			return nil, fmt.Errorf("--config %s: runtime: %w", path, err)
		}
	}
	if c.UIDBase != 0 || c.UIDCount != 0 {
		if err := checkNativeUIDRange(c.UIDBase, c.UIDCount); err != nil {
			return nil, fmt.Errorf("--config %s: uid_base and uid_count: %w", path, err)
		}
	}
	if c.Model != nil && c.Model.APIKey != "" && c.Model.APIKeyEnv != "" {
		return nil, fmt.Errorf("--config %s: model: api_key and api_key_env exclude each other: give one", path)
	}
	if err := c.Agents.apply(&c.agents); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if err := c.Maxima.Validate(); err != nil {
		return nil, fmt.Errorf("--config %s: maxima: %w", path, err)
	}
	if err := checkPolicies(c); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if c.CacheTTL != nil {
		d, err := time.ParseDuration(*c.CacheTTL) // "0" too: it is a duration
		if err != nil || d < 0 {
			return nil, fmt.Errorf("--config %s: cache_ttl must be a duration such as \"10m\", or \"0\" to turn the cache off, got %q", path, *c.CacheTTL)
		}
		c.cacheTTL = d
	}
	for _, d := range []struct {
		name, value string
		into        *time.Duration
	}{{"body_timeout", c.BodyTimeout, &c.bodyTimeout}, {"idle_timeout", c.IdleTimeout, &c.idleTimeout}} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--config %s: %s must be a positive duration such as \"30s\", got %q", path, d.name, d.value)
		}
		*d.into = v
	}
	return c, nil
}

// defaultCacheTTL is how long results stay cached unless the file says.
const defaultCacheTTL = 10 * time.Minute

// apply sets cfg's fields from the file.
func (c *serveConfig) apply(cfg *service.Config) {
	cfg.MaxConcurrent, cfg.MaxQueue, cfg.MaxSessions = c.MaxConcurrent, c.MaxQueue, c.MaxSessions
	cfg.MaxBodyBytes, cfg.MaxPayloadBytes = c.MaxBodyBytes, c.MaxPayloadBytes
	cfg.CacheTTL, cfg.Maxima = c.cacheTTL, c.Maxima
	cfg.TenantDefaults, cfg.Tenants = c.TenantDefaults, c.Tenants
	cfg.Agents = c.agents
	if c.Policy != nil {
		cfg.Policy = *c.Policy
	}
}

// redactor builds the redaction policy: the file's, plus hostPaths, the
// server's own directories, and the key of the model (serverModel).
func (c *serveConfig) redactor(hostPaths []string) (*policy.Redactor, error) {
	rc := policy.DefaultRedactConfig()
	if r := c.Redact; r != nil {
		if r.Patterns != nil {
			rc.Patterns = *r.Patterns
		}
		rc.Secrets, rc.Extra = r.Secrets, r.Extra
		rc.HostPaths = append(rc.HostPaths, r.HostPaths...)
	}
	rc.HostPaths = append(rc.HostPaths, hostPaths...)
	if m, _, _ := serverModel(c.Model); m.APIKey != "" {
		rc = withModelKey(rc, m.APIKey)
	}
	red, err := policy.NewRedactor(rc)
	if err != nil {
		return nil, fmt.Errorf("--config: redact: %w", err)
	}
	return red, nil
}

// loadConfigAndRedactor reads the --config file at path and builds its
// redaction policy, which also hides the server's own directories (the
// database's, db, and the image store's); errors are usage errors.
func loadConfigAndRedactor(path, db, imageStore string) (*serveConfig, *policy.Redactor, error) {
	conf, err := loadServeConfig(path)
	if err != nil {
		return nil, nil, usageError(err)
	}
	redactor, err := conf.redactor(serverHostPaths(db, imageStore))
	if err != nil {
		return nil, nil, usageError(err)
	}
	return conf, redactor, nil
}

// checkPolicies checks the policies of a --config file: the server's
// (its mode and preset) and the tenants', naming the field.
func checkPolicies(c *serveConfig) error {
	if c.Policy != nil {
		if err := c.Policy.Validate(); err != nil {
			return err
		}
		if _, err := codecheck.Lookup("policy.preset", c.Policy.Preset); err != nil {
			return err
		}
	}
	if m := c.TenantDefaults.Policy; m != "" && m.Rank() < 0 {
		return fmt.Errorf("tenant_defaults.policy must be off, warn or block, got %q", m)
	}
	for name, t := range c.Tenants {
		if t.Policy != "" && t.Policy.Rank() < 0 {
			return fmt.Errorf("tenants.%s.policy must be off, warn or block, got %q", name, t.Policy)
		}
	}
	return nil
}
