package e2bapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/crucible-sandbox/crucible/service"
)

// Config configures a Handler. Service and Authenticate are required.
type Config struct {
	// Service is the pipeline every sandbox is a session of.
	Service *service.Service
	// Authenticate maps the X-API-Key header of a control-plane request
	// ("" when absent) to the tenant it acts as. A refused key is an
	// error that is ErrUnauthorized (Unauthorized makes one), whose text
	// the caller sees (401); any other error is a failure of the platform.
	Authenticate func(ctx context.Context, apiKey string) (tenant string, err error)
	// BodyTimeout is how long a request body may take to arrive (default
	// DefaultBodyTimeout).
	BodyTimeout time.Duration
	// Logger receives the handler's logs (default slog.Default()).
	Logger *slog.Logger
}

// DefaultBodyTimeout is Config.BodyTimeout's default.
const DefaultBodyTimeout = 30 * time.Second

// The sandbox ports E2B's SDKs name in E2b-Sandbox-Port.
const (
	// EnvdPort is envd's: files, processes, the file system.
	EnvdPort = "49983"
	// InterpreterPort is the code interpreter's: /execute, /contexts.
	InterpreterPort = "49999"
)

// Handler serves the E2B-compatible API. Create it with New.
type Handler struct {
	svc         *service.Service
	auth        func(ctx context.Context, apiKey string) (string, error)
	bodyTimeout time.Duration
	log         *slog.Logger
	control     *http.ServeMux
	envd        *http.ServeMux
	interp      *http.ServeMux
	sandboxes   sandboxTable
	rpc         http.Handler // envd's Connect services (newEnvdRPC)
}

// New returns a handler for cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Service == nil || cfg.Authenticate == nil {
		return nil, errors.New("e2bapi: Config needs a Service and Authenticate")
	}
	if cfg.BodyTimeout < 0 {
		return nil, errors.New("e2bapi: Config.BodyTimeout must not be negative")
	}
	if cfg.BodyTimeout == 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Handler{svc: cfg.Service, auth: cfg.Authenticate, bodyTimeout: cfg.BodyTimeout, log: cfg.Logger,
		sandboxes: sandboxTable{m: map[string]*sandboxEntry{}}}
	h.rpc = newEnvdRPC(h.envdSandboxOf)
	h.routes()
	return h, nil
}

// envdSandboxOf is sandboxOf for envd's Connect services: a refusal keeps
// its meaning as a Connect code (a wrong or missing token is
// unauthenticated, a sandbox that does not run unavailable).
func (h *Handler) envdSandboxOf(r *http.Request) (envdSandbox, error) {
	e, err := h.sandboxOf(r)
	if err != nil {
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.Code == http.StatusUnauthorized:
			return nil, envdError{code: connect.CodeUnauthenticated, msg: ae.Message}
		case errors.As(err, &ae) && ae.Code == http.StatusBadGateway:
			// As the plain routes' 502: the SDK reads it as a sandbox gone.
			return nil, envdError{code: connect.CodeUnavailable, msg: ae.Message}
		}
		return nil, envdError{code: connect.CodeNotFound, msg: err.Error()}
	}
	return e, nil
}

func (h *Handler) routes() {
	c := http.NewServeMux()
	c.HandleFunc("POST /sandboxes", h.createSandbox)
	c.HandleFunc("POST /v2/sandboxes", h.createSandbox)
	c.HandleFunc("GET /sandboxes", h.listSandboxes)
	c.HandleFunc("GET /v2/sandboxes", h.listSandboxes)
	c.HandleFunc("GET /sandboxes/{id}", h.getSandbox)
	c.HandleFunc("DELETE /sandboxes/{id}", h.killSandbox)
	c.HandleFunc("POST /sandboxes/{id}/timeout", h.setTimeout)
	c.HandleFunc("POST /sandboxes/{id}/connect", h.connectSandbox)
	c.HandleFunc("POST /v2/sandboxes/{id}/connect", h.connectSandbox)
	const suspend = " is not supported by Crucible: a sandbox is a live session that cannot be suspended or copied; kill it and create a new one"
	c.HandleFunc("POST /sandboxes/{id}/pause", h.unsupported("pausing a sandbox"+suspend))
	c.HandleFunc("POST /sandboxes/{id}/resume", h.unsupported("resuming a paused sandbox"+suspend))
	c.HandleFunc("POST /sandboxes/{id}/fork", h.unsupported("forking a sandbox"+suspend))
	c.HandleFunc("POST /sandboxes/{id}/snapshots", h.unsupported("a snapshot"+suspend))
	c.HandleFunc("GET /sandboxes/{id}/metrics", h.unsupported("sandbox metrics are not served by this API: each cell's metrics (wall and CPU time, peak memory) are in its run record, GET /v1/runs?session=ID of Crucible's API"))
	logs := h.unsupported("sandbox logs are not served by this API: each cell's output is in its run record, GET /v1/runs of Crucible's API")
	c.HandleFunc("GET /sandboxes/{id}/logs", logs)
	c.HandleFunc("GET /v2/sandboxes/{id}/logs", logs)
	c.HandleFunc("PUT /sandboxes/{id}/network", h.unsupported("changing a sandbox's network is not supported: a Crucible sandbox has no network"))
	c.HandleFunc("/", noEndpoint("the control plane"))
	h.control = c

	e := http.NewServeMux()
	e.HandleFunc("GET /health", h.health)
	e.HandleFunc("GET /files", h.readFile)
	e.HandleFunc("POST /files", h.writeFiles)
	e.Handle("/process.Process/", h.rpc) // envd's Connect services, which authorise each call (envdSandboxOf)
	e.Handle("/filesystem.Filesystem/", h.rpc)
	e.HandleFunc("/", noEndpoint("envd"))
	h.envd = e

	i := http.NewServeMux()
	i.HandleFunc("POST /execute", h.execute)
	i.HandleFunc("POST /contexts", h.createContext)
	i.HandleFunc("GET /contexts", h.listContexts)
	i.HandleFunc("DELETE /contexts/{id}", h.deleteContext)
	i.HandleFunc("POST /contexts/{id}/restart", h.restartContext)
	i.HandleFunc("/", noEndpoint("the code interpreter"))
	h.interp = i
}

// ServeHTTP routes r as E2B's proxy does on an address: a request with an
// E2b-Sandbox-Id header is for a sandbox, its code interpreter when
// E2b-Sandbox-Port is 49999, else its envd; any other is for the control
// plane.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(headerSandboxID) == "" {
		h.control.ServeHTTP(w, r)
		return
	}
	switch port := r.Header.Get(headerSandboxPort); port {
	case InterpreterPort:
		h.interp.ServeHTTP(w, r)
	case EnvdPort, "":
		h.envd.ServeHTTP(w, r)
	default:
		writeError(w, &apiError{Code: http.StatusNotImplemented, Field: headerSandboxPort,
			Rule:    "must be " + EnvdPort + " (envd) or " + InterpreterPort + " (the code interpreter)",
			Message: "port " + port + " of a sandbox cannot be reached: a Crucible sandbox serves only envd (" + EnvdPort + ") and the code interpreter (" + InterpreterPort + "), and has no network"})
	}
}

// unsupported answers 501 with message to what E2B offers and a Crucible
// sandbox cannot do, after the same checks as any call on the sandbox
// (key, tenant): an unknown sandbox is still a 404.
func (h *Handler) unsupported(message string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := h.ownSandbox(w, r); !ok {
			return
		}
		writeError(w, notImplemented("%s", message))
	}
}

// noEndpoint answers a request no route of surface matches.
func noEndpoint(surface string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e := errorf(http.StatusNotFound, "no such endpoint of %s: %s %s", surface, r.Method, r.URL.Path)
		e.Field, e.Rule = "path", "must name an endpoint of E2B's API that Crucible serves (see package e2bapi)"
		writeError(w, e)
	}
}

// health serves envd's GET /health: 204 while the sandbox runs (502, as
// for every request to it, once it does not).
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	if _, err := h.sandboxOf(r); err != nil {
		h.fail(w, "health", err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
