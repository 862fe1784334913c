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
	"github.com/crucible-sandbox/crucible/server"
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
	// MaxBodyBytes caps a request body (default 64 MiB).
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// CacheTTL is how long results stay cached, as a Go duration ("10m").
	CacheTTL string `json:"cache_ttl"`
	// Redact configures output redaction; Patterns defaults to true.
	Redact *redactConfig `json:"redact"`
	// cacheTTL is CacheTTL parsed, zero when not set.
	cacheTTL time.Duration
	// TenantDefaults are the limits of every tenant not in Tenants.
	TenantDefaults server.TenantLimits `json:"tenant_defaults"`
	// Tenants are limits of particular tenants, replacing the defaults.
	Tenants map[string]server.TenantLimits `json:"tenants"`
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
	c := &serveConfig{}
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
	case c.MaxBodyBytes < 0:
		return nil, fmt.Errorf("--config %s: max_body_bytes must not be negative, got %d", path, c.MaxBodyBytes)
	}
	if c.CacheTTL != "" {
		d, err := time.ParseDuration(c.CacheTTL)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--config %s: cache_ttl must be a positive duration such as \"10m\", got %q", path, c.CacheTTL)
		}
		c.cacheTTL = d
	}
	return c, nil
}

// apply sets cfg's fields from the file.
func (c *serveConfig) apply(cfg *server.Config) {
	cfg.MaxConcurrent, cfg.MaxQueue, cfg.MaxBodyBytes = c.MaxConcurrent, c.MaxQueue, c.MaxBodyBytes
	cfg.CacheTTL = c.cacheTTL
	cfg.TenantDefaults, cfg.Tenants = c.TenantDefaults, c.Tenants
}

// redactor builds the redaction policy: the file's, plus hostPaths, the
// server's own directories.
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
	red, err := policy.NewRedactor(rc)
	if err != nil {
		return nil, fmt.Errorf("--config: redact: %w", err)
	}
	return red, nil
}
