package docker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/policy/egress"
	"github.com/crucible-sandbox/crucible/policy/egress/egresstest"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
	"github.com/crucible-sandbox/crucible/service"
)

// newEgressRuntime returns a runtime of the OCI runtime oci whose proxy
// resolves names with cfg's resolver.
func newEgressRuntime(t *testing.T, oci string, cfg egress.Config) *docker.Runtime {
	t.Helper()
	newRuntime(t, oci).Close() // the host's checks, and the image imported
	rt, err := docker.New(context.Background(), docker.Options{Image: imported.ref, ImageDigest: imported.dig, OCIRuntime: oci, Egress: cfg})
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// TestEgressAllowlist: a docker run with an allowlist reaches the allowed
// host through the host's proxy and nothing else (egresstest.Probe: the
// hostile program and its checks, the native runtime's), from a network
// namespace that is not the host's; and nothing of the run is left on the
// host once it has ended: no process or descriptor in its namespace, no
// interface, no socket of the proxy's.
func TestEgressAllowlist(t *testing.T) {
	probe := egresstest.NewProbe(t, "198.51.100.8/30")
	rt := newEgressRuntime(t, docker.RuncRuntime, egress.Config{Resolver: probe.DNS.Resolver()})
	hostNetns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	linksBefore := egresstest.HostLinks(t)
	socketsBefore := inetSockets(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := rt.Run(ctx, probe.Request())
	if err != nil {
		t.Fatalf("Run: %v (%s: %s)", err, res.Status, res.Reason)
	}
	netns := probe.Check(t, res)
	if netns == hostNetns {
		t.Errorf("the program ran in the host's network namespace %s", netns)
	}
	if held := egresstest.NetnsHolders(t, netns); len(held) > 0 {
		t.Errorf("the run's network namespace %s is still held by %v", netns, held)
	}
	if got := egresstest.HostLinks(t); got != linksBefore {
		t.Errorf("interfaces %q after the run, %q before", got, linksBefore)
	}
	// The proxy's listener and connections are closed with the run; the
	// test's upstream servers close their ends of the proxy's connections
	// when they read its close, a moment later.
	deadline := time.Now().Add(5 * time.Second)
	for got := inetSockets(t); got != socketsBefore; got = inetSockets(t) {
		if time.Now().After(deadline) {
			t.Errorf("%d network sockets open after the run, %d before: the proxy left some", got, socketsBefore)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inetSockets counts this process's sockets that are not Unix sockets of
// the host's namespace (the Docker client's connections to the daemon,
// which it keeps or closes as it likes): its TCP and UDP sockets, in
// whatever network namespace they were opened.
func inetSockets(t *testing.T) int {
	t.Helper()
	unixSocks, err := os.ReadFile("/proc/self/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	unixInodes := map[string]bool{}
	for _, l := range strings.Split(string(unixSocks), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 6 {
			unixInodes[f[6]] = true
		}
	}
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range fds {
		l, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(l, "socket:[") {
			continue
		}
		if !unixInodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] {
			n++
		}
	}
	return n
}

// TestEgressNone: a docker run without an allowlist gets no proxy, no
// proxy variables and no log.
func TestEgressNone(t *testing.T) {
	rt := newRuntime(t, docker.RuncRuntime)
	defer rt.Close()
	res, err := rt.Run(context.Background(), sandbox.Request{Language: sandbox.Python,
		Code: `import os, socket; print(sorted(k for k in os.environ if "proxy" in k.lower()), [n for _, n in socket.if_nameindex()])`})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != "[] ['lo']" || res.Network != nil {
		t.Errorf("got %q (%s %s) and log %+v; want no proxy variable, only lo, no log", got, res.Status, res.Stderr, res.Network)
	}
}

// TestEgressGVisor: a gvisor run with an allowlist is refused as bad
// input naming the field, and the reason holds: a listener in the
// network namespace of a gVisor container's processes on the host is out
// of the program's reach, where the same listener in a runc container's
// is reached (the control). If a runsc ever lets the program reach it,
// this test fails, and the gvisor runtime could serve allowlists.
func TestEgressGVisor(t *testing.T) {
	rt := newRuntime(t, docker.GVisorRuntime)
	defer rt.Close()
	res, err := rt.Run(context.Background(), sandbox.Request{Language: sandbox.Python, Code: "print(1)",
		Network: sandbox.Network{Allow: []string{"example.org"}}})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || ie.Field != "network" || !strings.Contains(ie.Rule, "gvisor") {
		t.Errorf("Run: error %v (%T), want an InputError naming the field network and gvisor", err, err)
	}
	if res.Status != "" || len(res.Stdout) != 0 {
		t.Errorf("result %+v, want none: the program must not run", res)
	}

	// Through a service (crucible run's and the API's path): refused
	// before the run is queued, as bad input, which the API answers 400.
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	svc, err := service.New(service.Config{Runtime: runsOnly{rt}, Redactor: red, TenantDefaults: service.TenantLimits{AllowNetwork: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Shutdown(context.Background())
	_, err = svc.Run(context.Background(), "t", sandbox.Request{Language: sandbox.Python, Code: "print(1)",
		Network: sandbox.Network{Allow: []string{"example.org"}}}, service.RunOptions{})
	if !errors.As(err, &ie) || ie.Field != "network" {
		t.Errorf("service Run: error %v (%T), want an InputError naming the field network", err, err)
	}

	for _, tc := range []struct{ name, oci, want string }{
		{"runc", docker.RuncRuntime, "connected"},
		{"gvisor", docker.GVisorRuntime, "ECONNREFUSED"},
	} {
		t.Run("reach/"+tc.name, func(t *testing.T) {
			if got := reachFromContainer(t, tc.oci); got != tc.want {
				t.Errorf("a listener in the container's network namespace on the host: the program got %q, want %q", got, tc.want)
			}
		})
	}
}

// runsOnly is a docker runtime as a service's: it has no sessions.
type runsOnly struct{ *docker.Runtime }

func (runsOnly) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	return nil, errors.New("no sessions")
}

// reachFromContainer starts a container of oci with no network, opens a
// listener on 127.0.0.1 in the network namespace its init has on the
// host, and returns what a program in it got connecting there.
func reachFromContainer(t *testing.T, oci string) string {
	t.Helper()
	newRuntime(t, oci).Close() // the host's checks, and the image imported
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := docker.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: imported.ref, Cmd: []string{"sleep", "infinity"}, Labels: map[string]string{"org.crucible.sandbox": "1"}},
		&container.HostConfig{NetworkMode: "none", Runtime: oci, CapDrop: []string{"ALL"}, Init: new(true)}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Errorf("remove container: %v", err)
		}
	}()
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ins, err := cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := egress.ListenIn(fmt.Sprintf("/proc/%d/ns/net", ins.State.Pid), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	port := ln.Addr().String()[strings.LastIndex(ln.Addr().String(), ":")+1:]
	ex, err := cli.ContainerExecCreate(ctx, c.ID, container.ExecOptions{User: "65534", AttachStdout: true, AttachStderr: true,
		Cmd: []string{"python3", "-c", `import errno, socket
s = socket.socket(); s.settimeout(5)
try:
    s.connect(("127.0.0.1", ` + port + `)); print("connected")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))`}})
	if err != nil {
		t.Fatal(err)
	}
	att, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	var out, errOut bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errOut, att.Reader); err != nil {
		t.Fatal(err)
	}
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut.String())
	}
	return strings.TrimSpace(out.String())
}
