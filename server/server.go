package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/e2bapi"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
	"github.com/crucible-sandbox/crucible/webui"
)

// Config configures a Server. Service and Keys are required; zero values
// of the other fields take the documented defaults.
type Config struct {
	// Service is the run pipeline the API serves.
	Service *service.Service
	// Keys holds the API keys that map a request to its tenant.
	Keys store.Store
	// RequireKeys makes an API key mandatory on every /v1/ request even
	// while no key exists. Without it, a server with no valid key serves
	// DefaultTenant to anyone who can reach it: set it whenever the server
	// listens beyond loopback.
	RequireKeys bool
	// AllowedHosts are the host names (or IP addresses) a request's Host
	// header may name beyond the loopback names and the address the
	// server was reached at: the names of a server reached by DNS name or
	// through a reverse proxy. Any other Host is refused with 403, against
	// DNS rebinding (browser.go). Each is a name without a port
	// (CheckAllowedHost); any port goes.
	AllowedHosts []string
	// BodyTimeout is how long a request body may take to arrive (default
	// DefaultBodyTimeout); a slower one is refused with 408.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle that long (default
	// DefaultIdleTimeout), so idle clients cannot hold connections open.
	IdleTimeout time.Duration
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
	// Forward, when set (cluster mode), is offered every authenticated
	// /v1/ request, with its tenant, before this server's API: it answers
	// the request and returns true when the session it names is another
	// node's (package cluster's Forwarder), or returns false to leave it
	// here. It runs after the checks of Host, browsers and the path, so
	// that nothing another node would refuse is forwarded.
	Forward func(w http.ResponseWriter, r *http.Request, tenant string) bool
	// ForwardSandbox, when set (cluster mode), is offered every request
	// of the E2B-compatible API that names a sandbox (e2bapi.SandboxID),
	// before this node's E2B API sees it: it forwards it to the node
	// that holds the sandbox, which authenticates it, or returns false.
	ForwardSandbox func(w http.ResponseWriter, r *http.Request, id string) bool
	// MCPSessions, when set (cluster mode), records each MCP session
	// this node opens as its own, by its Mcp-Session-Id, so that Forward
	// sends the session's later requests here through any node, and
	// forgets it once it ended (mcpCatalog).
	MCPSessions MCPCatalog
}

// DefaultBodyTimeout is Config.BodyTimeout's default: a 64 MiB body at
// 2 MiB/s.
const DefaultBodyTimeout = 30 * time.Second

// HeaderTimeout bounds the arrival of a request's headers, for the
// http.Server NewHTTPServer returns.
const HeaderTimeout = 10 * time.Second

// DefaultIdleTimeout is Config.IdleTimeout's default.
const DefaultIdleTimeout = 2 * time.Minute

// Server serves Crucible's HTTP API over a service.Service. Create it
// with New.
type Server struct {
	cfg  Config
	svc  *service.Service
	log  *slog.Logger
	auth *authenticator
	mux  *http.ServeMux
	e2b  *e2bapi.Handler
	// allowedHosts and crossOrigin make checkBrowser's checks.
	allowedHosts map[string]bool
	crossOrigin  *http.CrossOriginProtection
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Service == nil || cfg.Keys == nil {
		return nil, errors.New("server: Config needs a Service and Keys")
	}
	if cfg.BodyTimeout < 0 || cfg.IdleTimeout < 0 {
		return nil, errors.New("server: Config.BodyTimeout and IdleTimeout must not be negative")
	}
	if cfg.BodyTimeout == 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	hosts, err := allowedHostSet(cfg.AllowedHosts)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, svc: cfg.Service, log: cfg.Logger, auth: newAuthenticator(cfg.Keys, cfg.RequireKeys),
		allowedHosts: hosts, crossOrigin: http.NewCrossOriginProtection()}
	s.e2b, err = e2bapi.New(e2bapi.Config{Service: cfg.Service, Authenticate: s.auth.e2bTenant, BodyTimeout: cfg.BodyTimeout, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// NewHTTPServer returns an http.Server for s's Handler with the
// connection timeouts set: headers must arrive within HeaderTimeout and
// an idle keep-alive connection is closed after Config.IdleTimeout. (Bodies are
// bounded per request, by Config.BodyTimeout; no write timeout is set, so
// that a long run and its stream are never cut.)
func (s *Server) NewHTTPServer() *http.Server {
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: HeaderTimeout, IdleTimeout: s.cfg.IdleTimeout,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/runs", s.createRun)
	m.HandleFunc("GET /v1/runs", s.listRuns)
	m.HandleFunc("GET /v1/runs/{id}", s.getRun)
	m.HandleFunc("GET /v1/runs/{id}/artifacts/{name...}", s.getArtifact)
	m.HandleFunc("GET /v1/runs/{id}/events", s.runEvents)
	m.HandleFunc("POST /v1/sessions", s.createSession)
	m.HandleFunc("GET /v1/sessions", s.listSessions)
	m.HandleFunc("GET /v1/sessions/{id}", s.getSession)
	m.HandleFunc("POST /v1/sessions/{id}/exec", s.execCell)
	m.HandleFunc("GET /v1/sessions/{id}/files", s.listFiles)
	m.HandleFunc("PUT /v1/sessions/{id}/files/{path...}", s.writeFile)
	m.HandleFunc("GET /v1/sessions/{id}/files/{path...}", s.readFile)
	m.HandleFunc("DELETE /v1/sessions/{id}", s.deleteSession)
	m.HandleFunc("POST /v1/agent-runs", s.createAgentRun)
	m.HandleFunc("GET /v1/agent-runs", s.listAgentRuns)
	m.HandleFunc("GET /v1/agent-runs/{id}", s.getAgentRun)
	m.HandleFunc("GET /v1/agent-runs/{id}/events", s.agentRunEvents)
	m.HandleFunc("POST /v1/agent-runs/{id}/approvals/{approval_id}", s.decideApproval)
	m.HandleFunc("DELETE /v1/agent-runs/{id}", s.cancelAgentRun)
	m.HandleFunc("POST /v1/analyses", s.createAnalysis)
	m.HandleFunc("GET /v1/analyses", s.listAnalyses)
	m.HandleFunc("GET /v1/analyses/{id}", s.getAnalysis)
	m.HandleFunc("DELETE /v1/analyses/{id}", s.deleteAnalysis)
	m.HandleFunc("POST /v1/analyses/{id}/questions", s.askQuestion)
	m.HandleFunc("GET /v1/analyses/{id}/questions", s.listQuestions)
	m.HandleFunc("GET /v1/analyses/{id}/questions/{n}", s.getQuestion)
	m.HandleFunc("GET /v1/analyses/{id}/questions/{n}/events", s.questionEvents)
	m.HandleFunc("POST /v1/analyses/{id}/questions/{n}/approvals/{approval_id}", s.decideQuestionApproval)
	m.HandleFunc("GET /v1/analyses/{id}/files/{name...}", s.analysisFile)
	m.HandleFunc("GET /v1/images", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.svc.Images())
	})
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.Health{Status: "ok"})
	})
	m.Handle("GET /metrics", promhttp.HandlerFor(s.svc.Metrics(), promhttp.HandlerOpts{}))
	m.HandleFunc("GET /openapi.json", serveOpenAPI)
	mcpH := &mcpHandlers{s: s, tenant: map[string]http.Handler{}} // streamable HTTP: messages, its stream, session end
	m.Handle("POST /mcp", mcpH)
	m.Handle("GET /mcp", mcpH)
	m.Handle("DELETE /mcp", mcpH)
	ui := webui.Handler() // the web UI: its page at /, its assets under /ui/ (webui.AssetPrefix)
	m.Handle("GET /{$}", ui)
	m.Handle("GET /ui/{asset...}", ui)
	s.mux = m
}

// E2BPrefix is where the E2B-compatible API (package e2bapi) is served:
// E2B's SDKs reach it with E2B_API_URL and E2B_SANDBOX_URL both set to
// the server's address followed by it (http://HOST:PORT/e2b).
const E2BPrefix = "/e2b"

// Handler returns the HTTP handler of the API. Every request, whatever
// its route, must first name this server in its Host and not be a
// browser's cross-site request (browser.go: against DNS rebinding and
// cross-site requests, answered 403). Every /v1/ and /mcp (the Model
// Context Protocol over streamable HTTP, package mcpserver) request is
// then authenticated (see Config.RequireKeys); /healthz, /metrics,
// /openapi.json and the web UI (package webui: its page at /, its assets
// under /ui/, which hold no data and call the /v1/ API with the user's
// key) are open. The E2B-compatible API under E2BPrefix authenticates
// its own requests: the control plane by X-API-Key, with the rules of
// Bearer keys (authenticator.e2bTenant), and a sandbox's data plane by
// the sandbox's access token.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if apiErr := s.checkBrowser(r); apiErr != nil {
			writeError(w, apiErr)
			return
		}
		// The mux would answer an unclean path ("//", "..") with a redirect
		// to its cleaned form: a client that follows it reaches another
		// resource than it named (PUT .../files//etc/passwd). Refuse it.
		if p := r.URL.Path; p != "/" && path.Clean(p) != strings.TrimSuffix(p, "/") || strings.HasSuffix(p, "//") {
			writeError(w, invalid("path", "must be a clean path: no empty, '.' or '..' segments"))
			return
		}
		if strings.HasPrefix(r.URL.Path, E2BPrefix+"/") {
			// E2B's API, not Crucible's: not in /openapi.json, and
			// authenticated by package e2bapi itself.
			if f := s.cfg.ForwardSandbox; f != nil {
				if f(w, r, e2bapi.SandboxID(strings.TrimPrefix(r.URL.Path, E2BPrefix), r.Header)) {
					return
				}
			}
			http.StripPrefix(E2BPrefix, s.e2b).ServeHTTP(w, r)
			return
		}
		h, pattern := s.mux.Handler(r)
		if pattern == "" {
			// The mux refuses it (404 or 405): answer in JSON.
			h.ServeHTTP(&jsonFallback{ResponseWriter: w}, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/mcp" {
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
			if s.cfg.Forward != nil && s.cfg.Forward(w, r, tenant) { // /v1/ and /mcp
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant))
		}
		s.mux.ServeHTTP(w, r) // which sets the path values
	})
}
