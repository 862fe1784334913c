package docker

import "github.com/crucible-sandbox/crucible/sandbox"

// A run with a network allowlist reaches the host's egress proxy, and
// nothing else, on its own loopback: the native runtime's way
// (sandbox/linux/egress.go), for the same reasons.
//
// Docker (runc): the container's NetworkMode is "none", so runc gives it
// a network namespace of its own whose only interface is its loopback.
// The container's init (docker-init, State.Pid) is a host process in that
// namespace: the proxy's listener is opened there (egress.ListenIn on
// /proc/PID/ns/net, once that process is checked to be the container's:
// containerNetns) after the container has started and before the
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
// above) or where the daemon is not on this host's kernel (macOS and
// Windows: Docker Desktop's virtual machine). Run checks it; a service checks it before it queues a run
// (service.NetworkChecker), so that the API answers 400.
func (r *Runtime) CheckNetwork(n sandbox.Network) error {
	switch {
	case n.IsZero():
		return nil
	case r.ociRuntime == GVisorRuntime:
		return &sandbox.InputError{Field: "network", Rule: `must be "none" under the gvisor runtime: its sandboxes have gVisor's own network stack, which cannot reach the host's egress proxy; use the native or docker runtime for a run with an allowlist`}
	case !proxyReachesContainers:
		return &sandbox.InputError{Field: "network", Rule: `must be "none" on this operating system: the Docker daemon runs in a virtual machine, whose containers' network namespaces the egress proxy cannot reach; run on Linux for a run with an allowlist`}
	}
	return nil
}
