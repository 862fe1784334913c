package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/client"

	"github.com/crucible-sandbox/crucible/internal/uidrange"
	"github.com/crucible-sandbox/crucible/policy/egress"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Runtime names a container runtime of the daemon a Runtime runs with.
const (
	// RuncRuntime is Docker's default OCI runtime: namespaces, cgroups and
	// seccomp on the host's kernel.
	RuncRuntime = ""
	// GVisorRuntime is gVisor's runsc, registered in the daemon's
	// daemon.json under this name (scripts/dockerd.sh does).
	GVisorRuntime = "runsc"
)

// Options configure a Runtime.
type Options struct {
	// Image is the Docker image every run's container starts from: one
	// ImportImage made from a Crucible image, or any local image that has
	// the interpreters at the paths package lang names (/usr/bin/python3,
	// /usr/bin/node, /bin/bash) and env and sleep. Required.
	Image string
	// ImageDigest identifies the image's content; every Result carries it.
	ImageDigest string
	// OCIRuntime is the daemon's runtime to run containers with:
	// RuncRuntime (the daemon's default) or GVisorRuntime.
	OCIRuntime string
	// Env is added to every program's environment after the language's
	// own and before the request's, as the native runtime's Options.Env.
	Env []string
	// UIDBase and UIDCount reserve the host uids containers run as; zero
	// means DefaultUIDBase and DefaultUIDCount.
	UIDBase, UIDCount int
	// Egress configures the proxy through which a run with a network
	// allowlist reaches what it allows (egress.go); the zero value
	// resolves names with the host's resolver.
	Egress egress.Config
	// Host is the daemon's address, such as unix:///var/run/docker.sock;
	// empty takes DOCKER_HOST, else the default socket.
	Host string
	// Prestart is how many containers to keep created and started ahead
	// of time, waiting for a request with the default limits; each serves
	// one run, is removed after it and replaced in the background (pool.go).
	// 0 makes each container when its run starts. A server wants a few; a
	// one-shot command wants none. Close removes them.
	Prestart int
	// Logger receives what fails in the background, where no caller sees
	// it: a pool's builds and removals. Nil means slog.Default().
	Logger *slog.Logger
}

// Runtime runs each request in a fresh container. It is safe for
// concurrent use.
type Runtime struct {
	cli         *client.Client
	image       string
	imageDigest string
	ociRuntime  string
	env         []string
	seccomp     string
	uids        *uidrange.Allocator
	pool        *pool // nil without Options.Prestart
	egress      egress.Config
	kv          kernelView
	// cgroupV1 is set when the daemon's containers are in cgroup v1
	// hierarchies (sockmem.go).
	cgroupV1 bool
	// ncpu is how many processors the daemon's host has.
	ncpu int
}

var _ sandbox.Runtime = (*Runtime)(nil)

// ErrUnavailable reports that this host cannot run the runtime: no daemon
// answers, or it lacks the OCI runtime or the image. The message says what
// is missing and how to get it.
var ErrUnavailable = errors.New("runtime unavailable")

// setupHint is how to get a daemon with gVisor registered.
const setupHint = "install Docker Engine and gVisor's runsc and start dockerd: scripts/setup.sh (or scripts/dockerd.sh) does, as root"

// New connects to the Docker daemon and checks that it can run what opts
// ask: the daemon answers, knows the OCI runtime, and holds the image. An
// error wraps ErrUnavailable when the host lacks any of them.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.Image == "" {
		return nil, errors.New("docker.Options: Image is required")
	}
	if opts.Prestart < 0 {
		return nil, fmt.Errorf("docker.Options: Prestart must not be negative, got %d", opts.Prestart)
	}
	if opts.OCIRuntime != RuncRuntime && opts.OCIRuntime != GVisorRuntime {
		return nil, fmt.Errorf("docker.Options: OCIRuntime must be %q (Docker's default) or %q (gVisor), got %q", RuncRuntime, GVisorRuntime, opts.OCIRuntime)
	}
	uids, err := newUIDs(cmp.Or(opts.UIDBase, DefaultUIDBase), cmp.Or(opts.UIDCount, DefaultUIDCount))
	if err != nil {
		return nil, err
	}
	cli, err := Connect(ctx, opts.Host)
	if err != nil {
		return nil, err
	}
	r := &Runtime{cli: cli, image: opts.Image, imageDigest: opts.ImageDigest, ociRuntime: opts.OCIRuntime, env: opts.Env, uids: uids, egress: opts.Egress}
	info, err := cli.Info(ctx)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: docker info: %v", ErrUnavailable, err)
	}
	r.cgroupV1, r.ncpu = info.CgroupVersion == "1", max(info.NCPU, 1)
	if opts.OCIRuntime != RuncRuntime {
		if _, ok := info.Runtimes[opts.OCIRuntime]; !ok {
			names := make([]string, 0, len(info.Runtimes))
			for n := range info.Runtimes {
				names = append(names, n)
			}
			slices.Sort(names)
			cli.Close()
			return nil, fmt.Errorf("%w: the Docker daemon has no runtime %q (it has %s): register gVisor's runsc in /etc/docker/daemon.json and reload dockerd; %s",
				ErrUnavailable, opts.OCIRuntime, strings.Join(names, ", "), setupHint)
		}
	}
	if _, err := cli.ImageInspect(ctx, opts.Image); err != nil {
		cli.Close()
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: the Docker daemon has no image %q: import a Crucible image with `crucible image docker-import NAME`, or name a local Docker image", ErrUnavailable, opts.Image)
		}
		return nil, fmt.Errorf("%w: inspect image %q: %v", ErrUnavailable, opts.Image, err)
	}
	if r.seccomp, err = seccompJSON(); err == nil && opts.OCIRuntime == GVisorRuntime {
		r.seccomp, err = gvisorSeccomp(r.seccomp)
	}
	if err != nil {
		cli.Close()
		return nil, err
	}
	if err := sweep(ctx, cli); err != nil {
		cli.Close()
		return nil, fmt.Errorf("remove what ended processes' runs left: %w", err)
	}
	if opts.Prestart > 0 {
		if _, err := SweepPools(ctx, cli); err != nil {
			cli.Close()
			return nil, err
		}
		r.pool = newPool(r, opts.Prestart, cmp.Or(opts.Logger, slog.Default()))
	}
	return r, nil
}

// Connect returns a client of the daemon at host (empty: DOCKER_HOST, else
// the default socket) that answered a ping, speaking the highest API
// version both sides know (Docker Engine 20.10 speaks 1.41).
func Connect(ctx context.Context, host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: docker client: %v", ErrUnavailable, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: no Docker daemon answers at %s (%v); %s", ErrUnavailable, cli.DaemonHost(), err, setupHint)
	}
	cli.NegotiateAPIVersion(ctx)
	return cli, nil
}

// Close removes the pool's containers (Options.Prestart), waiting for
// those of runs that ended to be removed, and releases the client. It must
// not be called while runs are in progress.
func (r *Runtime) Close() error {
	var err error
	if r.pool != nil {
		err = r.pool.close()
	}
	return errors.Join(err, r.cli.Close())
}

// name is the runtime's name as --runtime says it, for logs.
func (r *Runtime) name() string {
	if r.ociRuntime == GVisorRuntime {
		return "gvisor"
	}
	return "docker"
}

// Run runs req in a fresh container; see sandbox.Runtime.
func (r *Runtime) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	if err := req.Validate(); err != nil {
		return sandbox.Result{}, err
	}
	if err := r.CheckNetwork(req.Network); err != nil {
		return sandbox.Result{}, err
	}
	lim := req.Limits.WithDefaults()
	res := sandbox.Result{
		Language:    req.Language,
		CodeHash:    sandbox.CodeHash(req.Code),
		Limits:      lim,
		ExitCode:    -1,
		ImageDigest: r.imageDigest,
		Stdout:      sandbox.Data{},
		Stderr:      sandbox.Data{},
	}
	if ctx.Err() != nil {
		res.Status, res.Reason = sandbox.StatusKilled, "cancelled before the run started"
		return res, nil
	}
	x := &execution{rt: r, req: &req, lim: lim, res: &res}
	if err := x.run(ctx); err != nil {
		res.Status, res.Reason = sandbox.StatusInternal, err.Error()
		return res, err
	}
	return res, nil
}
