package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/crucible-sandbox/crucible/policy/egress"
)

// proxyReachesContainers: on Linux the daemon's containers are processes
// of this kernel, whose network namespaces the proxy can listen in.
const proxyReachesContainers = true

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
	ns, err := containerNetns(ins.State.Pid, x.id)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	ln, err := egress.ListenIn(fmt.Sprintf("/proc/self/fd/%d", ns.Fd()), "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	x.req.Env = egress.ProxyEnv(x.req.Env, ln.Addr().(*net.TCPAddr).Port)
	return egress.Serve(ln, x.rt.egress, x.req.Network), nil
}

// containerNetns opens the network namespace of process pid, which the
// daemon says is container id's init, and checks that it is that
// container's: a listener in any other namespace would give the program
// no proxy, or give the proxy to whatever else lives there.
//
// Security: pid is the daemon's word. A daemon on another machine
// (DOCKER_HOST=tcp://...) names a process of its own kernel, and this
// host's process of that number is anything: another sandbox, or this
// host's own namespace. So the namespace is opened first, and only then
// is the process checked to be in the container's cgroup (the daemon
// names it after the container's id) and in a namespace not this
// process's: a pid reused between the daemon's answer and the open fails
// the check, and one reused after it does not change the namespace the
// descriptor holds.
func containerNetns(pid int, id string) (*os.File, error) {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, fmt.Errorf("the container's network namespace: %w", err)
	}
	fail := func(err error) (*os.File, error) {
		ns.Close()
		return nil, err
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return fail(fmt.Errorf("the container's init: %w", err))
	}
	if !bytes.Contains(cg, []byte(id)) {
		return fail(fmt.Errorf("process %d, which the Docker daemon named the init of container %s, is not in its cgroup on this host: the daemon runs on another kernel (DOCKER_HOST), whose containers the egress proxy cannot reach", pid, id))
	}
	st, err := ns.Stat()
	if err != nil {
		return fail(err)
	}
	own, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		return fail(err)
	}
	if os.SameFile(st, own) {
		return fail(fmt.Errorf("container %s is in the host's network namespace", id))
	}
	return ns, nil
}
