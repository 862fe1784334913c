package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/crucible-sandbox/crucible/policy/egress"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// A run with a network allowlist reaches the host's egress proxy, and
// nothing else, on its own loopback: the native runtime's way
// (sandbox/linux/egress.go), for the same reasons.
//
// Docker (runc): the container's NetworkMode is "none", so runc gives it
// a network namespace of its own whose only interface is its loopback.
// The container's init (docker-init, State.Pid) is a host process in that
// namespace: the proxy's listener is opened there (egress.ListenIn on
// /proc/PID/ns/net) once the container has started and before the
// program does, and the program gets the proxy variables in its
// environment. No veth pair, bridge or firewall rule is made (dockerd
// runs with --bridge=none --iptables=false and none of its networking is
// used): the kernel keeps every packet the program sends inside the
// container's namespace, whose only way out is the proxy's socket, which
// this process accepts from. The listener and the proxy's connections
// are closed when the program has ended, before the container (and with
// it the namespace) is removed.
//
// gVisor: runsc --network=none (how scripts/dockerd.sh registers it)
// gives the program gVisor's own network stack, inside the sandbox's
// kernel (the sentry), with a loopback of its own. The host network
// namespace runsc's processes sit in is not the program's: a listener
// opened there is refused to the program (TestEgressGVisor shows it).
// Reaching a proxy would take runsc --network=sandbox (gVisor's stack
// over a veth of the host's: the route the native runtime rejects, its
// safety resting on firewall rules) or --network=host (the program's
// sockets become the host kernel's, the attack surface gVisor exists to
// remove). So a gVisor run with an allowlist is refused as bad input,
// naming the field, before anything is started.

// CheckNetwork returns a *sandbox.InputError naming the field network
// when the runtime cannot give a run n: an allowlist, under gVisor (see
// above). Run checks it; a service checks it before it queues a run
// (service.NetworkChecker), so that the API answers 400.
func (r *Runtime) CheckNetwork(n sandbox.Network) error {
	if n.IsZero() || r.ociRuntime != GVisorRuntime {
		return nil
	}
	return &sandbox.InputError{Field: "network", Rule: `must be "none" under the gvisor runtime: its sandboxes have gVisor's own network stack, which cannot reach the host's egress proxy; use the native or docker runtime for a run with an allowlist`}
}

// startEgress opens the run's proxy on the container's loopback and
// sends the program to it (x.req.Env gets the proxy variables). The
// container must be running and the program not yet started.
func (x *execution) startEgress(ctx context.Context) (*egress.Proxy, error) {
	ins, err := x.rt.cli.ContainerInspect(ctx, x.id)
	if err != nil {
		return nil, fmt.Errorf("inspect container: %w", err)
	}
	if ins.State == nil || !ins.State.Running || ins.State.Pid <= 0 {
		return nil, errors.New("the container's init is not running")
	}
	// The init is this run's and lives until the container is killed, so
	// its pid names the container's namespace from here to ListenIn. A
	// namespace that is this process's own would put the listener on the
	// host's loopback: never, whatever the daemon answered.
	nsPath := fmt.Sprintf("/proc/%d/ns/net", ins.State.Pid)
	switch same, err := sameNamespace(nsPath, "/proc/self/ns/net"); {
	case err != nil:
		return nil, fmt.Errorf("the container's network namespace: %w", err)
	case same:
		return nil, fmt.Errorf("the container's network namespace %s is the host's", nsPath)
	}
	ln, err := egress.ListenIn(nsPath, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	x.req.Env = egress.ProxyEnv(x.req.Env, ln.Addr().(*net.TCPAddr).Port)
	return egress.Serve(ln, x.rt.egress, x.req.Network), nil
}

// sameNamespace reports whether the namespace files a and b name the same
// namespace.
func sameNamespace(a, b string) (bool, error) {
	ai, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	bi, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(ai, bi), nil
}
