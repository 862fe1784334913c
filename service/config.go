package service

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/store"
)

// Runtime runs requests and starts sessions; *linux.Runtime is one, and so
// is a remote server through package client.
type Runtime interface {
	sandbox.Runtime
	sandbox.SessionRuntime
}

// Config configures a Service. Runtime and Redactor are required; zero
// values of the other fields take the documented defaults.
type Config struct {
	// Runtime runs the requests and sessions of the default image: those
	// that name no image, or ImageName.
	Runtime Runtime
	// ImageName names Runtime's image (default DefaultImageName).
	ImageName string
	// ImageDigest identifies the root filesystem Runtime runs code in; it
	// is part of every cache key, so that a new image never serves results
	// of an old one.
	ImageDigest string
	// Images are the other images a request may name, each with its own
	// runtime. Names are unique, and 1-63 characters of a-z, 0-9, '.',
	// '_' and '-', starting with a letter or digit.
	Images []Image
	// Store keeps the run records and the result cache. Nil keeps no
	// records and caches nothing (a one-shot command line run).
	Store store.Store
	// Redactor removes secrets from every output before it is stored,
	// cached, answered or shown to a model.
	Redactor *policy.Redactor
	// Hints, when set, writes the hint of every structured error of a
	// run or a cell in the default image (sandbox.ExecError.Hint); each
	// of Images has its own. Nil adds none.
	Hints Hinter
	// Contents, when set, says which Python modules the default image
	// holds (each of Images has its own): sessions and analyses that name
	// no image go to the first image with pandas, and an analysis is
	// refused up front in an image without it (imagecontents.go). Nil
	// means unknown: the image is taken to have them.
	Contents Contents
	// MaxConcurrent is how many runs may execute at once (default: twice
	// the number of CPUs, DefaultConcurrencyPerCPU: a run's sandbox spends
	// part of its life setting up and tearing down, not on a CPU).
	MaxConcurrent int
	// MaxQueue is how many admitted runs may wait for a slot (default 64);
	// more are refused (KindBusy).
	MaxQueue int
	// MaxSessions is how many sessions may be open at once, all tenants
	// together (default 16).
	MaxSessions int
	// MaxBodyBytes caps one request body (default 64 MiB).
	MaxBodyBytes int64
	// MaxPayloadBytes bounds the memory request bodies hold at once,
	// while they are read and until their run ends (default
	// DefaultPayloadFactor times MaxBodyBytes, so that one body of the
	// largest size always fits; with a model, at least one swe run's
	// request of SWERequestBytes). A body waits for its share before a byte of it is read.
	MaxPayloadBytes int64
	// PayloadWait is how long a body waits for its share of
	// MaxPayloadBytes before it is refused (default 1 min: a waiting body
	// costs nothing, it is not read).
	PayloadWait time.Duration
	// CacheTTL is how long a result stays in the cache. Zero turns the
	// cache off; a run is looked up and cached only when it asks to be
	// (RunOptions.Cache).
	CacheTTL time.Duration
	// Maxima are the largest limits a request may ask for on this host;
	// a zero field takes DefaultMaxima's. A request above one is refused
	// naming the field, and a default above one is lowered to it.
	Maxima sandbox.Limits
	// TenantDefaults are the limits of every tenant without an entry in
	// Tenants. A zero field takes a fair share of the server's: half its
	// run places (MaxConcurrent plus MaxQueue), half its sessions, half its
	// agent runs, all of MaxBodyBytes.
	TenantDefaults TenantLimits
	// Tenants are the limits of particular tenants; zero fields take
	// TenantDefaults'.
	Tenants map[string]TenantLimits
	// Logger receives the service's logs (default slog.Default()).
	Logger *slog.Logger
	// Pools, when set, reports the runtime's pools of ready sandboxes by
	// name, for the metrics.
	Pools func() map[string]PoolStats
	// Agents configures the code-agent runs (StartAgentRun): the model,
	// the budgets' maxima, approvals; without a Model there are none.
	Agents AgentConfig
	// Placement, when set (cluster mode), records the sessions this
	// service opens as this node's and may refuse new ones (placement.go).
	// Nil: a single node; nothing changes.
	Placement Placement
	// RunQueue, when set (cluster mode, with a Store), is the cluster's
	// queue of stateless runs: a run no slot of this node can start at
	// once goes there, for any node with a free slot (RunQueue). At start
	// the service then settles only this node's runs.
	RunQueue RunQueue
	// Shares, when set (cluster mode), counts tenants' configured quotas
	// of runs, sessions and agent runs across the cluster's nodes
	// (shares.go). Nil: each node counts its own; nothing else changes.
	Shares Shares
	// Policy is the server's static code policy: the least mode of every
	// run and session (zero: off; agents' code at least AgentMode), and
	// the preset of a request that names none (zero: the built-in
	// "strict"). A tenant's Policy and a request's can only tighten it.
	Policy sandbox.Policy
}

// TenantLimits bound what one tenant may hold at once, on top of the
// server-wide limits.
type TenantLimits struct {
	// MaxConcurrentRuns bounds the tenant's admitted runs, queued or
	// running.
	MaxConcurrentRuns int `json:"max_concurrent_runs,omitempty"`
	// MaxSessions bounds the tenant's open sessions.
	MaxSessions int `json:"max_sessions,omitempty"`
	// MaxRequestBytes bounds a request body of the tenant (it cannot raise
	// Config.MaxBodyBytes).
	MaxRequestBytes int64 `json:"max_request_bytes,omitempty"`
	// MaxAgentRuns bounds the tenant's agent runs going on.
	MaxAgentRuns int `json:"max_agent_runs,omitempty"`
	// Policy is the least static code policy mode of the tenant's runs
	// and sessions, on top of Config.Policy's (empty: TenantDefaults').
	Policy sandbox.PolicyMode `json:"policy,omitempty"`
	// AllowNetwork lets the tenant's runs ask for network by allowlist
	// (sandbox.Network); unset takes TenantDefaults', and unset there is
	// false: no tenant may unless the config says so. A tenant's false
	// overrides a default true.
	AllowNetwork *bool `json:"allow_network,omitempty"`
}

// NetworkAllowed reports whether AllowNetwork is set and true.
func (l TenantLimits) NetworkAllowed() bool { return l.AllowNetwork != nil && *l.AllowNetwork }

// Defaults of Config's zero fields.
const (
	// DefaultConcurrencyPerCPU times the number of CPUs is
	// Config.MaxConcurrent's default. Measured with `crucible bench api`
	// at 32 clients on 2 CPUs: 1× reached 0.87× the throughput of 32
	// direct callers, 2× reached 0.96×.
	DefaultConcurrencyPerCPU = 2
	// DefaultMaxQueue is Config.MaxQueue's default.
	DefaultMaxQueue = 64
	// DefaultMaxSessions is Config.MaxSessions' default.
	DefaultMaxSessions = 16
	// DefaultMaxBodyBytes is Config.MaxBodyBytes's default, 64 MiB.
	DefaultMaxBodyBytes = 64 << 20
	// DefaultPayloadFactor times MaxBodyBytes is MaxPayloadBytes' default.
	// A body costs about twice its size while it is decoded (the raw
	// bytes, then the decoded strings and Data), and a reservation counts
	// that: see payloadCost.
	DefaultPayloadFactor = 2
	// DefaultPayloadWait is Config.PayloadWait's default.
	DefaultPayloadWait = time.Minute
)

// withDefaults checks c and fills in its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.Runtime == nil || c.Redactor == nil {
		return c, errors.New("service: Config needs a Runtime and a Redactor")
	}
	if c.RunQueue != nil && c.Store == nil {
		return c, errors.New("service: Config.RunQueue needs a Store: the nodes of a cluster share the runs' records")
	}
	if c.MaxConcurrent < 0 || c.MaxQueue < 0 || c.MaxSessions < 0 || c.MaxBodyBytes < 0 ||
		c.MaxPayloadBytes < 0 || c.PayloadWait < 0 || c.CacheTTL < 0 {
		return c, errors.New("service: Config limits must not be negative")
	}
	if err := checkTenantLimits("TenantDefaults", c.TenantDefaults); err != nil {
		return c, err
	}
	for name, l := range c.Tenants {
		if !store.ValidTenant(name) {
			return c, fmt.Errorf("service: Config.Tenants: %q is not a valid tenant name (1-63 characters of a-z, 0-9, '_', '-')", name)
		}
		if err := checkTenantLimits("Tenants["+name+"]", l); err != nil {
			return c, err
		}
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultConcurrencyPerCPU * runtime.NumCPU()
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = DefaultMaxQueue
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxPayloadBytes == 0 {
		c.MaxPayloadBytes = DefaultPayloadFactor * c.MaxBodyBytes
		if c.Agents.Model != nil { // room for a swe run's repository (MaxAgentRunBodyBytes)
			c.MaxPayloadBytes = max(c.MaxPayloadBytes, payloadCost(SWERequestBytes))
		}
	}
	if c.MaxPayloadBytes < payloadCost(c.MaxBodyBytes) {
		return c, fmt.Errorf("service: Config.MaxPayloadBytes (%d) must hold one body of MaxBodyBytes (%d), which costs %d", c.MaxPayloadBytes, c.MaxBodyBytes, payloadCost(c.MaxBodyBytes))
	}
	if c.PayloadWait == 0 {
		c.PayloadWait = DefaultPayloadWait
	}
	if c.Policy.Mode == "" {
		c.Policy.Mode = sandbox.PolicyOff
	}
	if c.Policy.Mode.Rank() < 0 {
		return c, fmt.Errorf("service: Config.Policy.Mode must be off, warn or block, got %q", c.Policy.Mode)
	}
	if _, err := codecheck.Lookup("policy.preset", c.Policy.Preset); err != nil {
		return c, fmt.Errorf("service: Config.Policy.Preset: %w", err)
	}
	maxima, err := maximaWithDefaults(c.Maxima)
	if err != nil {
		return c, err
	}
	c.Maxima = maxima
	if c.Agents, err = c.Agents.withDefaults(maxima.WallTimeMS); err != nil {
		return c, err
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// checkTenantLimits refuses negative limits, naming the field.
func checkTenantLimits(field string, l TenantLimits) error {
	switch {
	case l.MaxConcurrentRuns < 0:
		return fmt.Errorf("service: Config.%s.MaxConcurrentRuns must not be negative, got %d", field, l.MaxConcurrentRuns)
	case l.MaxSessions < 0:
		return fmt.Errorf("service: Config.%s.MaxSessions must not be negative, got %d", field, l.MaxSessions)
	case l.MaxRequestBytes < 0:
		return fmt.Errorf("service: Config.%s.MaxRequestBytes must not be negative, got %d", field, l.MaxRequestBytes)
	case l.MaxAgentRuns < 0:
		return fmt.Errorf("service: Config.%s.MaxAgentRuns must not be negative, got %d", field, l.MaxAgentRuns)
	case l.Policy != "" && l.Policy.Rank() < 0:
		return fmt.Errorf("service: Config.%s.Policy must be off, warn or block, got %q", field, l.Policy)
	}
	return nil
}

// LimitsFor returns tenant's limits: its own entry in Config.Tenants,
// then Config.TenantDefaults, then a fair share of the server's, field by
// field. Fair share by default: no tenant can take every run place or
// every session, so that one busy tenant never locks the others out.
func (s *Service) LimitsFor(tenant string) TenantLimits {
	l := s.cfg.Tenants[tenant]
	d := s.cfg.TenantDefaults
	if l.MaxConcurrentRuns == 0 {
		l.MaxConcurrentRuns = d.MaxConcurrentRuns
	}
	if l.MaxSessions == 0 {
		l.MaxSessions = d.MaxSessions
	}
	if l.MaxRequestBytes == 0 {
		l.MaxRequestBytes = d.MaxRequestBytes
	}
	if l.MaxAgentRuns == 0 {
		l.MaxAgentRuns = d.MaxAgentRuns
	}
	if l.AllowNetwork == nil {
		l.AllowNetwork = d.AllowNetwork
	}
	if l.MaxAgentRuns == 0 {
		l.MaxAgentRuns = max(1, s.cfg.Agents.MaxRuns/2)
	}
	if l.MaxConcurrentRuns == 0 {
		l.MaxConcurrentRuns = max(1, (s.cfg.MaxConcurrent+s.cfg.MaxQueue)/2)
	}
	if l.MaxSessions == 0 {
		l.MaxSessions = max(1, s.cfg.MaxSessions/2)
	}
	if l.MaxRequestBytes == 0 || l.MaxRequestBytes > s.cfg.MaxBodyBytes {
		l.MaxRequestBytes = s.cfg.MaxBodyBytes
	}
	return l
}
