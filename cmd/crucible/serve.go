package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/cluster"
	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// serveFlags are the flags of `crucible serve`.
type serveFlags struct {
	addr string
	db   string
	warm int
	// warmGiven says --warm was given: then it applies even to a root
	// filesystem without Python (warmFor).
	warmGiven bool
	// warmSessions is --warm-sessions.
	warmSessions int
	prestart     int
	rootfs       string
	images       []string
	store        string
	config       string
	// socket is --socket: the local socket of crucible run.
	socket string
	policy policyFlag
	// runtime is --runtime and --docker-image (or --config's runtime and
	// docker_image): the runtime of every image. runtimeGiven and
	// dockerImageGiven say the flags were given: they win over --config.
	runtime                        runtimeChoice
	runtimeGiven, dockerImageGiven bool
	// allowedHosts is --allowed-host: names the Host header may give
	// beyond loopback and the listen address.
	allowedHosts []string
	// cluster are --cluster and the flags that go with it.
	cluster clusterFlags
}

// shutdownGrace is how long a stopping server waits for runs in progress
// before it kills them.
const shutdownGrace = 30 * time.Second

func newServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use: "serve",
		Example: `  crucible serve --addr 127.0.0.1:8080 --warm 4
  crucible serve --image datascience --image host --config serve.json
  crucible serve --image datascience --warm-sessions 2

  curl -s localhost:8080/v1/runs --json '{"language": "py", "code": "print(1)"}'
  curl -s localhost:8080/v1/runs --json '{"code": "import pandas", "image": "datascience"}'
  curl -s localhost:8080/v1/images
  curl -s localhost:8080/v1/analyses -F datasets=@sales.csv -F image=datascience`,
		Short: "Serve the HTTP API on loopback",
		Long: `Serve Crucible's HTTP API: runs (POST /v1/runs, GET /v1/runs[/{id}]),
sessions (/v1/sessions/...), code-agent runs (/v1/agent-runs/...), data
analyses (/v1/analyses/...), the images offered (GET /v1/images), /healthz
and /metrics; the Model Context Protocol over streamable HTTP at /mcp, for
MCP clients, with the tools of crucible mcp, behind the same API keys; an
E2B-compatible API at /e2b, for E2B's SDKs unchanged (set E2B_API_URL and
E2B_SANDBOX_URL to http://HOST:PORT/e2b, and E2B_API_KEY to a key of
crucible key create --e2b); and
at / a web UI, embedded in the binary: the analyst
(upload data, read its profile, ask questions; a link to one analysis is
/#/analyses/ID), a notebook over sessions and the run history, which use
this API with the key they ask for.

Images: each --image NAME (repeatable) offers a built image (crucible image
ls), or with NAME "host" the host's own system directories, read-only; the
first is the default. A run or a session picks one with "image": NAME in
its request, and a name not offered is refused listing those offered.
Without --image the server offers "host" (or "rootfs", the --rootfs
directory) and, when it is built (crucible image build), "datascience".
Runs default to the first; sessions, analyses (and so the web UI's
notebook and analyst) and agent runs to the first image with pandas. An
analysis in an image without pandas is refused (422 unsuitable_image).
Each image has its own sandboxes: --warm, --warm-sessions and --prestart
apply to each; --warm 0 turns the zygote slots off.

Runtimes: --runtime (or "runtime" in --config) runs every image on one of
RUNTIMES.
With docker or gvisor each --image is imported into Docker on its first use (crucible image build imports it ahead), or
--docker-image REF offers a local Docker image; without either, the
datascience image alone (the host's directories cannot be a container's
root). --prestart keeps that many containers started per image; --warm
and --warm-sessions, uid_base and uid_count are the native runtime's. A
network allowlist is refused under gvisor (400, naming network). crucible
run sends no runs to such a server. crucible doctor says which runtimes this
host offers.

--warm-sessions N keeps N sessions per image started ahead of requests,
the Python kernel running with numpy, pandas and matplotlib.pyplot (those
the image has) already imported; a new session (or analysis) takes one,
with its limits, files and variables applied then, and skips the
interpreter's start and those imports (about half a second in the
datascience image). A session setting a variable the interpreter reads
at its start (PYTHON*, LD_*, LC_*, LANG, TZ, HOME, MPL*, OMP_*, ...)
starts cold. Each holds memory while it waits, some 85 MiB with pandas,
and a uid; replacements are built while no cell runs. /metrics reports
the pool as "warm-sessions".

Run records and the result cache are kept in --db: a SQLite file path (the
default is ` + store.DefaultSQLitePath + `) or a postgres:// URL. Runs a
previous server left unfinished are marked interrupted at start.

Without API keys (` + "`crucible key create`" + `) the server serves one tenant,
"default", and only listens on a loopback address. Once a key exists it may
listen on any address, and then every /v1/ request needs a key, even if all
keys are later revoked.

Against web pages in your browser: every request must name this server in
its Host header (localhost, 127.0.0.0/8 or [::1], any port, or the address
it was reached at; a page that rebinds its own DNS name to this host sends
its own name, refused with 403), with keys as without. Reached by a DNS
name, or through a reverse proxy that keeps the client's Host, list that
name with --allowed-host NAME. A browser's cross-site POST, PUT or DELETE
(Sec-Fetch-Site or Origin of another site) is refused with 403, and a JSON
body must be sent as Content-Type: application/json, as curl's --json
does (415 otherwise). The local socket is no HTTP and none of this
applies to it: its mode and the caller's uid are its gate.

Sessions, opened through the API, MCP or the web UI's notebook as by
crucible session, get by default:SESSION_DEFAULTS.
A request's limits change them, within the server's maxima ("maxima" in
--config), which lower the defaults too; GET /v1/sessions says the
defaults in force.

--config FILE is a JSON object of server limits, redaction, per-tenant
limits and the agents' model; every field is optional and unknown ones are
refused:

  {"max_concurrent": 2, "max_queue": 64, "max_sessions": 16,
   "max_body_bytes": 67108864, "max_payload_bytes": 134217728,
   "body_timeout": "30s", "idle_timeout": "2m", "cache_ttl": "10m",
   "maxima": {"memory_bytes": 4294967296, "wall_time_ms": 600000},
   "redact": {"patterns": true, "secrets": ["value-to-hide"],
              "host_paths": ["/srv/data"], "extra": ["token=(\\w+)"]},
   "tenant_defaults": {"max_concurrent_runs": 4, "max_sessions": 2,
                       "max_request_bytes": 1048576, "max_agent_runs": 2},
   "tenants": {"acme": {"max_concurrent_runs": 16, "allow_network": true, "policy": "block"}},
   "policy": {"mode": "warn", "preset": "strict"},
   "uid_base": 2000000000, "uid_count": 65536,
   "model": {"provider": "openai", "model": "qwen2.5-coder",
             "base_url": "http://localhost:11434/v1", "api_key_env": "MY_KEY"},
   "agents": {"max_runs": 8, "approval_timeout": "10m", "retain": 64,
              "retain_for": "1h", "maxima": {"max_retries": 10,
              "max_tokens": 1000000, "max_exec_ms": 1800000,
              "cell_timeout_ms": 600000, "max_artifact_bytes": 268435456,
              "max_steps": 250, "max_wall_ms": 7200000}}}

Agent runs (POST /v1/agent-runs) and the questions of analyses (POST
/v1/analyses/{id}/questions; an analysis is created and profiled without a
model, in an image with pandas such as datascience) use the server's model: "model" in --config
over the environment as for crucible agent (CRUCIBLE_PROVIDER, CRUCIBLE_MODEL,
OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY); "api_key_env" names the
variable that holds the key ("api_key" holds it in the file). No request
names a model, endpoint or key, and the key is redacted from every output.
Without a model the agent endpoints answer 501. "agents" caps the budgets a
request may ask for (the values above are the defaults), the runs going on
(a tenant's share, "max_agent_runs" in "tenants", is half of "max_runs" by
default), how long a program waits for approval before the run ends denied,
and how many ended runs, with their traces, are kept in memory and how long.

No tenant may ask for network (a run's "network": {"allow": [...]}, which
the server's proxy serves, resolving names with this host's resolver)
unless "allow_network" is true for it in "tenants" or "tenant_defaults"; a
tenant's false overrides a default true. A refused run is answered 403,
naming the field network. /metrics counts the proxy's connections by
verdict (crucible_egress_connections_total) and their bytes
(crucible_egress_bytes_total); each run's record lists its connections.

The static code policy checks code before it runs (off, warn: run and
record the findings, block: run nothing of code with findings; the
"strict" preset: blocked modules, builtins and evasions in Python,
require/import of child_process, fs, net... in JavaScript, network tools
in bash). The server's mode ("policy" in --config, or --policy, the
stricter of the two) is the least of every run and session; a tenant's
"policy" and a request's "policy" field can only tighten it, and agents'
code is checked at least in warn mode, the findings fed back to the model.
It is a seatbelt, never the boundary: the sandbox is.

Each sandbox runs as a host uid of its own, from [uid_base, uid_base +
uid_count): reserve the range for Crucible (no user or subordinate-uid
range may overlap it). uid_count bounds the sandboxes alive at once.

crucible run, run by this user on this host, sends its runs here when
this server offers the root filesystem or image it asks for, over a unix
socket (--socket, mode 0600; a caller of another user is refused). Those
runs take the sandboxes of --prestart and --warm and are otherwise local
runs: not recorded, not redacted, not held to the limits of --config, not
in the run counts of /metrics. A socket another live server holds is left
to it.

--cluster nats://HOST:PORT (or embedded, which starts a NATS server in
this process on --cluster-listen) makes this server a node of a
cluster: nodes share --db postgres://... and a NATS JetStream server,
each heartbeats into its registry; a run no slot of this node takes at
once is queued for the first node with a free slot; a request for a
session, analysis, agent run, MCP session or E2B sandbox another node
holds is forwarded to that node (--advertise: this node's URL as the
others reach it); tenants' quotas count across the cluster. A session on
a node that is down answers 410 "gone", a run it was running ends
"lost", its analyses are rebuilt on the node asked; a node cut off from
NATS takes no new work (503) until it is back. crucible cluster status
lists the nodes. See docs/cluster.md.

SIGINT or SIGTERM stops it: no new runs are admitted, those in progress
get ` + shutdownGrace.String() + ` to finish, and agent runs are cancelled.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.warmGiven = cmd.Flags().Changed("warm")
			f.runtimeGiven, f.dockerImageGiven = cmd.Flags().Changed("runtime"), cmd.Flags().Changed("docker-image")
			for _, name := range clusterFlagNames {
				if cmd.Flags().Changed(name) {
					f.cluster.given = append(f.cluster.given, name)
				}
			}
			return serve(cmd.Context(), &f)
		},
	}
	cmd.Long = strings.Replace(cmd.Long, "SESSION_DEFAULTS", describeSessionDefaults(), 1)
	cmd.Long = strings.Replace(cmd.Long, "RUNTIMES", runtimesHelp(), 1)
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address; beyond loopback only once an API key exists")
	fl.StringVar(&f.config, "config", "", "JSON file of server, redaction and tenant limits (see above)")
	addPolicyFlag(fl, &f.policy, "the server's least static code policy `MODE`: off, warn or block (the stricter of this and --config's; see above)")
	fl.StringVar(&f.db, "db", "", "run store: SQLite file path or postgres:// URL (default "+store.DefaultSQLitePath+")")
	addWarmFlag(fl, &f.warm)
	fl.IntVar(&f.warmSessions, "warm-sessions", 0, "Python sessions kept started with pandas imported, per image (~85 MiB each)")
	fl.IntVar(&f.prestart, "prestart", 2, "sandboxes kept built ahead of requests")
	fl.StringVar(&f.rootfs, "rootfs", "", "root filesystem directory (default: the host's system directories, read-only)")
	fl.StringArrayVar(&f.images, "image", nil, "offer the built image `NAME` (crucible image ls), or \"host\" for the host's directories; repeatable, the first is the default")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	fl.StringArrayVar(&f.allowedHosts, "allowed-host", nil, "also answer requests whose Host header names `NAME` (a DNS name or IP address, any port; repeatable): by default only localhost, 127.0.0.0/8, [::1] and the address reached are, against DNS rebinding")
	f.runtime.addFlags(fl)
	f.cluster.addFlags(fl)
	fl.StringVar(&f.socket, "socket", socketPath(), "unix socket `PATH` where crucible run, by this user on this host, sends its runs (\"\" for none; $"+socketEnv+" sets the default)")
	return cmd
}

// isLoopback reports whether the listen address addr is on loopback.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--addr %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback()), nil
}

func serve(ctx context.Context, f *serveFlags) error {
	loopback, err := isLoopback(f.addr)
	if err != nil {
		return usageError(err)
	}
	for _, h := range f.allowedHosts {
		if err := server.CheckAllowedHost(h); err != nil {
			return usageError(fmt.Errorf("--allowed-host %q: %w", h, err))
		}
	}
	if f.warm < 0 || f.prestart < 0 || f.warmSessions < 0 {
		return usageError(errors.New("--warm, --warm-sessions and --prestart must not be negative"))
	}
	if err := f.cluster.check(f.db); err != nil {
		return usageError(err)
	}
	conf, redactor, err := loadConfigAndRedactor(f.config, f.db, f.store)
	if err != nil {
		return err
	}
	f.runtime = f.runtime.withConfig(conf, f.runtimeGiven, f.dockerImageGiven)
	if err := f.runtime.check(); err != nil {
		return err
	}
	names, err := imageNames(f.images, f.rootfs, f.store, f.runtime)
	if err != nil {
		return usageError(err)
	}
	if err := checkUIDCount(conf, f, len(names)); err != nil {
		return usageError(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := store.Open(ctx, f.db)
	if err != nil {
		return platformError(err)
	}
	defer st.Close()
	keys, err := st.ActiveKeys(ctx)
	if err != nil {
		return platformError(err)
	}
	// Without a key, anyone who can reach the server could run code on
	// this host: only loopback is allowed then.
	if !loopback && keys == 0 {
		return usageError(fmt.Errorf("--addr %q: no API key exists: create one with `crucible key create --tenant NAME`, or listen on 127.0.0.1/::1/localhost", f.addr))
	}

	images, err := startImages(ctx, names, f, runtimeSettings{warm: func(root string) int { return f.warmFor(root, log) },
		warmSessions: f.warmSessions, prestart: f.prestart, uidBase: conf.UIDBase, uidCount: conf.UIDCount, logger: log})
	if err != nil {
		return err
	}
	defer closeImages(images)
	cfg, err := serviceConfig(images, st, redactor, log, conf)
	if err != nil {
		return err
	}
	cfg.Pools = poolsOf(images)
	cfg.Policy.Mode = cfg.Policy.Mode.Stricter(f.policy.mode)
	// In cluster mode the listener is bound first: the node advertises
	// its address when it joins, before the service is made.
	var ln net.Listener
	var node *cluster.Node
	var svcRef atomic.Pointer[service.Service]
	if f.cluster.url != "" {
		if ln, err = net.Listen("tcp", f.addr); err != nil {
			return platformError(err)
		}
		defer ln.Close()
		if node, err = f.cluster.join(ctx, ln.Addr(), names, &svcRef, log); err != nil {
			return platformError(err)
		}
		defer node.Close()
		cfg.Placement = node
		if cfg.RunQueue, err = node.RunQueue(ctx, names); err != nil {
			return platformError(err)
		}
		cfg.Shares = node // tenants' quotas count across the cluster
	}
	svc, err := service.New(cfg)
	if err != nil {
		return usageError(fmt.Errorf("--config: %w", err))
	}
	svcRef.Store(svc)
	if node != nil {
		if err := node.Heartbeat(ctx); err != nil {
			log.Warn("heartbeat failed; the registry shows this node's load at the next one", "err", err)
		}
	}
	logImages(log, svc, f.warmPerImage())
	setMemoryLimit(log, svc.PayloadBudget())
	scfg := server.Config{Service: svc, Keys: st, RequireKeys: !loopback, AllowedHosts: f.allowedHosts, BodyTimeout: conf.bodyTimeout,
		IdleTimeout: conf.idleTimeout, Logger: log}
	if node != nil {
		fw := node.Forwarder()
		scfg.Forward, scfg.ForwardSandbox, scfg.MCPSessions = fw.Forward, fw.ForwardSandbox, node
	}
	srv, err := server.New(scfg)
	if err != nil {
		return platformError(err)
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", f.addr); err != nil {
			return platformError(err)
		}
	}
	// The listener is bound, so connections already queue; say where the
	// server is before it answers its first request, so that whoever sees
	// it answer (a script, a test) also finds these lines in the log.
	switch {
	case keys == 0:
		log.Info("serving the Crucible API on loopback only: no API keys exist, so every caller is tenant \"default\"", "addr", ln.Addr().String(), "images", strings.Join(names, ","))
	default:
		log.Info("serving the Crucible API; API keys are required", "addr", ln.Addr().String(), "active_keys", keys, "images", strings.Join(names, ","))
	}

	fmt.Fprintf(os.Stderr, "web UI: %s\n", webUIURL(ln.Addr()))
	hs := srv.NewHTTPServer()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	local := startLocalServer(f.socket, images, f, log)

	select {
	case err := <-served:
		local.close(context.Background())
		return platformError(err)
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for runs in progress", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("HTTP connections still open at shutdown", "err", err)
	}
	local.close(sctx)
	if err := svc.Shutdown(sctx); err != nil {
		log.Warn("runs killed at shutdown", "err", err)
	}
	log.Info("stopped")
	return nil
}

// agentModel builds the model of the server's agents (serverModel), nil
// when none is configured: the server then runs no agents.
func agentModel(m *modelConfig, log *slog.Logger) (llm.Provider, error) {
	cfg, ok, err := serverModel(m)
	if err != nil {
		return nil, usageError(fmt.Errorf("--config: %w", err))
	}
	if !ok {
		log.Info(`agent runs are off: no model configured (--config "model", or CRUCIBLE_MODEL)`)
		return nil, nil
	}
	model, err := llm.New(cfg)
	if err != nil {
		return nil, usageError(fmt.Errorf("--config: model: %w", err))
	}
	log.Info("agent runs use the model", "model", model.Name())
	return model, nil
}

// sandboxTopDirs are paths every sandbox has of its own: a host directory
// under one of them is not redacted, or a program's own paths (/work/...)
// would be.
var sandboxTopDirs = []string{"work", "tmp", "code", "dev", "proc", "usr", "etc", "bin", "sbin", "lib", "lib64"}

// serverHostPaths are the host directories the server's own results must
// not reveal (in platform errors, for example): the database's directory,
// the image store, the working and home directories. "/", relative paths
// and paths under sandboxTopDirs are left out.
func serverHostPaths(db, imageStore string) []string {
	var paths []string
	add := func(p string) {
		p = filepath.Clean(p)
		top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		if filepath.IsAbs(p) && p != "/" && !slices.Contains(sandboxTopDirs, top) && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	switch {
	case db == "":
		add(filepath.Dir(store.DefaultSQLitePath))
	case !strings.Contains(db, "://"):
		add(filepath.Dir(strings.TrimPrefix(db, "sqlite:")))
	}
	add(imageStore)
	if wd, err := os.Getwd(); err == nil {
		add(wd)
	}
	if home, err := os.UserHomeDir(); err == nil {
		add(home)
	}
	return paths
}

// serverHeadroom is the memory a server needs beyond the request bodies
// it holds: its own heap, the runs' results, the database's caches.
const serverHeadroom = 96 << 20

// setMemoryLimit sets the Go runtime's soft memory limit to what the
// payload budget lets bodies hold plus serverHeadroom, unless GOMEMLIMIT
// sets one: the heap is then collected before garbage from earlier bodies
// doubles it (without a limit, a burst of large bodies peaked at 500 MiB
// for a budget of 192 MiB). It is a soft limit: the server never fails
// for it, at worst it collects more often.
func setMemoryLimit(log *slog.Logger, payloadBudget int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := payloadBudget + serverHeadroom
	debug.SetMemoryLimit(limit)
	log.Info("soft memory limit set from the payload budget", "limit_mib", limit>>20)
}
