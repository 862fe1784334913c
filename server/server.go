package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/store"
)

// Runtime runs requests and holds sessions; *linux.Runtime is one.
type Runtime interface {
	sandbox.Runtime
	sandbox.SessionRuntime
	// Session returns the open session called id.
	Session(id string) (sandbox.Session, bool)
}

// Config configures a Server. Runtime, Store and Redactor are required;
// zero values of the other fields take the documented defaults.
type Config struct {
	// Runtime runs the requests and sessions.
	Runtime Runtime
	// ImageDigest identifies the root filesystem Runtime runs code in; it
	// is part of every cache key, so that a new image never serves results
	// of an old one.
	ImageDigest string
	// Store keeps the run records and the result cache.
	Store store.Store
	// Redactor removes secrets from every output before it is stored,
	// cached or answered.
	Redactor *policy.Redactor
	// MaxConcurrent is how many runs may execute at once (default: twice
	// the number of CPUs, DefaultConcurrencyPerCPU: a run's sandbox spends
	// part of its life setting up and tearing down, not on a CPU).
	MaxConcurrent int
	// MaxQueue is how many admitted runs may wait for a slot (default 64);
	// more are refused with 429.
	MaxQueue int
	// MaxBodyBytes caps a request body (default 64 MiB); a larger one is
	// refused with 413.
	MaxBodyBytes int64
	// CacheTTL is how long a result stays in the cache (default 10 minutes).
	CacheTTL time.Duration
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
	// RequireKeys makes an API key mandatory on every /v1/ request even
	// while no key exists. Without it, a server with no valid key serves
	// DefaultTenant to anyone who can reach it: set it whenever the server
	// listens beyond loopback.
	RequireKeys bool
	// TenantDefaults are the limits of every tenant without an entry in
	// Tenants.
	TenantDefaults TenantLimits
	// Tenants are the limits of particular tenants; an entry replaces
	// TenantDefaults as a whole.
	Tenants map[string]TenantLimits
	// Pools, when set, reports the runtime's pools of ready sandboxes by
	// name, for /metrics.
	Pools func() map[string]PoolStats
}

// Defaults of Config's zero fields.
const (
	// DefaultConcurrencyPerCPU times the number of CPUs is
	// Config.MaxConcurrent's default. Measured with `crucible bench api`
	// at 32 clients on 2 CPUs: 1× reached 0.87× the throughput of 32
	// direct callers, 2× reached 0.96×.
	DefaultConcurrencyPerCPU = 2
	// DefaultMaxQueue is Config.MaxQueue's default.
	DefaultMaxQueue = 64
	// DefaultMaxBodyBytes is Config.MaxBodyBytes's default, 64 MiB.
	DefaultMaxBodyBytes = 64 << 20
	// DefaultCacheTTL is Config.CacheTTL's default.
	DefaultCacheTTL = 10 * time.Minute
)

// Server serves Crucible's HTTP API. Create it with New.
type Server struct {
	cfg        Config
	log        *slog.Logger
	auth       *authenticator
	tenantRuns runCounter
	feeds      feeds
	adm        *admission
	met        *metrics
	sessions   *sessionTracker
	// base is the context of background runs; cancelling it kills every
	// run still executing when Shutdown gives up waiting.
	base   context.Context
	cancel context.CancelFunc
	mux    *http.ServeMux
}

// New returns a server for cfg. It first settles the runs that a previous
// process left queued or running, marking them interrupted.
func New(cfg Config) (*Server, error) {
	if cfg.Runtime == nil || cfg.Store == nil || cfg.Redactor == nil {
		return nil, errors.New("server: Config needs a Runtime, a Store and a Redactor")
	}
	if cfg.MaxConcurrent < 0 || cfg.MaxQueue < 0 || cfg.MaxBodyBytes < 0 || cfg.CacheTTL < 0 {
		return nil, errors.New("server: Config limits must not be negative")
	}
	if err := checkTenantLimits("TenantDefaults", cfg.TenantDefaults); err != nil {
		return nil, err
	}
	for name, l := range cfg.Tenants {
		if !store.ValidTenant(name) {
			return nil, fmt.Errorf("server: Config.Tenants: %q is not a valid tenant name (1-63 characters of a-z, 0-9, '_', '-')", name)
		}
		if err := checkTenantLimits("Tenants["+name+"]", l); err != nil {
			return nil, err
		}
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = DefaultConcurrencyPerCPU * runtime.NumCPU()
	}
	if cfg.MaxQueue == 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	n, err := cfg.Store.MarkInterrupted(ctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("server: settle interrupted runs: %w", err)
	}
	cfg.Logger.Info("marked runs left by a previous server as interrupted", "count", n)

	s := &Server{cfg: cfg, log: cfg.Logger, sessions: newSessionTracker(cfg.Runtime),
		auth: newAuthenticator(cfg.Store, cfg.RequireKeys)}
	s.met = newMetrics(s.sessions.active, cfg.Pools)
	s.adm = newAdmission(cfg.MaxConcurrent, cfg.MaxQueue, s.met.queueDepth)
	s.base, s.cancel = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/runs", s.createRun)
	m.HandleFunc("GET /v1/runs", s.listRuns)
	m.HandleFunc("GET /v1/runs/{id}", s.getRun)
	m.HandleFunc("GET /v1/runs/{id}/artifacts/{name...}", s.getArtifact)
	m.HandleFunc("GET /v1/runs/{id}/events", s.runEvents)
	m.HandleFunc("POST /v1/sessions", s.createSession)
	m.HandleFunc("POST /v1/sessions/{id}/exec", s.execCell)
	m.HandleFunc("GET /v1/sessions/{id}/files", s.listFiles)
	m.HandleFunc("PUT /v1/sessions/{id}/files/{path...}", s.writeFile)
	m.HandleFunc("GET /v1/sessions/{id}/files/{path...}", s.readFile)
	m.HandleFunc("DELETE /v1/sessions/{id}", s.deleteSession)
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.Handle("GET /metrics", promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{}))
	m.HandleFunc("GET /openapi.json", serveOpenAPI)
	s.mux = m
}

// Handler returns the HTTP handler of the API. Every /v1/ request is
// authenticated first (see Config.RequireKeys); /healthz, /metrics and
// /openapi.json are open.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := s.mux.Handler(r)
		if pattern == "" {
			// The mux refuses it (404 or 405): answer in JSON.
			h.ServeHTTP(&jsonFallback{ResponseWriter: w}, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			tenant, apiErr, err := s.auth.tenant(r)
			if err != nil {
				s.fail(w, "authenticate", err)
				return
			}
			if apiErr != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="crucible"`)
				writeError(w, apiErr)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant))
		}
		s.mux.ServeHTTP(w, r) // which sets the path values
	})
}

// checkTenantLimits refuses negative limits, naming the field.
func checkTenantLimits(field string, l TenantLimits) error {
	switch {
	case l.MaxConcurrentRuns < 0:
		return fmt.Errorf("server: Config.%s.MaxConcurrentRuns must not be negative, got %d", field, l.MaxConcurrentRuns)
	case l.MaxSessions < 0:
		return fmt.Errorf("server: Config.%s.MaxSessions must not be negative, got %d", field, l.MaxSessions)
	case l.MaxRequestBytes < 0:
		return fmt.Errorf("server: Config.%s.MaxRequestBytes must not be negative, got %d", field, l.MaxRequestBytes)
	}
	return nil
}

// Shutdown stops admitting runs and waits for the admitted ones, queued or
// executing, to end. If ctx ends first, the runs still going are killed
// (their records end as "killed") and ctx's error is returned. Sessions are
// not closed: they belong to the Runtime.
func (s *Server) Shutdown(ctx context.Context) error {
	drained := s.adm.close()
	select {
	case <-drained:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.cancel()
		return ctx.Err()
	}
}
