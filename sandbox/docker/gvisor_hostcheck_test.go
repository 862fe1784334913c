package docker_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/client"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// This file looks at the host for what a gvisor run leaves there. A
// program under gVisor runs as tasks of the sandbox's own kernel, the
// sentry: the host's /proc has no entry for any of its processes, so the
// conformance suite's search for processes carrying a run's token finds
// nothing, whether they survive or not. What the host does run for a
// gvisor run is gVisor's machinery, named after the run's container: the
// runsc sandbox (the sentry) and gofer processes, runsc's exec processes
// and containerd's shim, the container's cgroups and mounts, and its
// volumes. gvisorRuntime finds the run's container while it runs (the
// exec whose command line holds the token), records all of that, and
// reports what of it still exists: sandboxtest's RunProcessFinder.

// hostTokenEnv is the variable in which the conformance suite passes a
// run's token (sandboxtest's tokenEnv).
const hostTokenEnv = "SANDBOXTEST_TOKEN"

// gvisorRuntime is the gvisor runtime as the conformance suite sees it:
// the runtime, plus the host-side record of each run's machinery.
type gvisorRuntime struct {
	*docker.Runtime
	cli *client.Client

	mu   sync.Mutex
	runs map[string]*gvisorRun // by token
}

// gvisorRun is what the host held for one run.
type gvisorRun struct {
	container string
	procs     map[hostPID]string // host processes seen, with their command lines
	volumes   []string
	ended     bool // Run has returned
}

// hostPID names a host process across pid reuse: its pid and start time.
type hostPID struct {
	pid   int
	start string
}

func newGVisorRuntime(rt *docker.Runtime, cli *client.Client) *gvisorRuntime {
	return &gvisorRuntime{Runtime: rt, cli: cli, runs: map[string]*gvisorRun{}}
}

// Close closes the runtime and the client of the host checks.
func (g *gvisorRuntime) Close() error {
	err := g.Runtime.Close()
	g.cli.Close()
	return err
}

// Run runs req and, while it runs, records the host's side of it.
func (g *gvisorRuntime) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	token := req.Env[hostTokenEnv]
	if token == "" {
		return g.Runtime.Run(ctx, req)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { g.watch(token, done) })
	res, err := g.Runtime.Run(ctx, req)
	close(done)
	wg.Wait()
	g.mu.Lock()
	if r := g.runs[token]; r != nil {
		r.ended = true
	}
	g.mu.Unlock()
	return res, err
}

// watch finds the container of the run marked with token, then records
// its host processes until done.
func (g *gvisorRuntime) watch(token string, done <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		g.mu.Lock()
		r := g.runs[token]
		g.mu.Unlock()
		if r == nil {
			if id, vols := g.findContainer(token); id != "" {
				r = &gvisorRun{container: id, procs: map[hostPID]string{}, volumes: vols}
				g.mu.Lock()
				g.runs[token] = r
				g.mu.Unlock()
			}
		}
		if r != nil {
			for p, cmd := range containerProcesses(r.container) {
				g.mu.Lock()
				r.procs[p] = cmd
				g.mu.Unlock()
			}
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// tokenContainers maps a run's token to the container that serves it, as
// the runtime tells (docker.OnContainer): the gVisor program's own
// processes, which carry the token, are the sentry's tasks, not the host's.
var tokenContainers sync.Map

func init() {
	docker.OnContainer(func(env map[string]string, id string) {
		if token := env[hostTokenEnv]; token != "" {
			tokenContainers.Store(token, id)
		}
	})
}

// findContainer returns the id and the volumes of the gvisor container
// that serves the run marked with token, once it exists.
func (g *gvisorRuntime) findContainer(token string) (string, []string) {
	v, ok := tokenContainers.Load(token)
	if !ok {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ins, err := g.cli.ContainerInspect(ctx, v.(string))
	if err != nil || ins.HostConfig == nil || ins.HostConfig.Runtime != docker.GVisorRuntime {
		return "", nil
	}
	var vols []string
	for _, m := range ins.Mounts {
		if m.Name != "" {
			vols = append(vols, m.Name)
		}
	}
	return ins.ID, vols
}

// containerProcesses returns the host processes whose command line names
// container id (runsc's sandbox, gofer and exec processes, the shim), and
// those in the container's cgroups.
func containerProcesses(id string) map[hostPID]string {
	found := map[hostPID]string{}
	add := func(pid int) {
		dir := "/proc/" + strconv.Itoa(pid)
		cmd, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			return
		}
		if start := docker.StartTime(pid); start != "" {
			found[hostPID{pid, start}] = strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.Contains(cmd, []byte(id)) {
			add(pid)
		}
	}
	for _, d := range containerCgroups(id) {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				add(pid)
			}
		}
	}
	return found
}

// procState returns the one-letter state of pid ("R", "S", "Z", ...), or
// "" when it is gone.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// containerCgroups returns the cgroup directories named after container
// id, in every hierarchy (cgroup v1: /sys/fs/cgroup/<controller>/docker/<id>;
// v2: /sys/fs/cgroup/.../docker-<id>.scope or docker/<id>).
func containerCgroups(id string) []string {
	var dirs []string
	for _, g := range []string{"/sys/fs/cgroup/*/docker/" + id + "*", "/sys/fs/cgroup/docker/" + id + "*", "/sys/fs/cgroup/*/*/docker-" + id + "*", "/sys/fs/cgroup/*/docker-" + id + "*"} {
		m, _ := filepath.Glob(g)
		dirs = append(dirs, m...)
	}
	return dirs
}

// settle bounds how long the host may take, once Run has returned, to
// finish ending a run's machinery: containerd's shim exits after the
// container's removal, asynchronously (its task is deleted, then the shim
// shuts down), a moment after the daemon answered the removal.
const settle = 5 * time.Second

// RunProcesses returns what of the run marked with token exists on the
// host: its container, its volumes, the host processes recorded for it
// that still live (same pid and start time, not a zombie), any other
// process naming its container, its cgroups and its mounts. While the run
// is in progress that is the positive control; once it has ended, what
// is still there after settle.
func (g *gvisorRuntime) RunProcesses(token string) []string {
	left := g.runLeft(token)
	g.mu.Lock()
	r := g.runs[token]
	ended := r != nil && r.ended
	g.mu.Unlock()
	for deadline := time.Now().Add(settle); ended && len(left) > 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = g.runLeft(token)
	}
	return left
}

// runLeft is RunProcesses without the settling.
func (g *gvisorRuntime) runLeft(token string) []string {
	g.mu.Lock()
	r := g.runs[token]
	var procs map[hostPID]string
	if r != nil {
		procs = make(map[hostPID]string, len(r.procs))
		for p, c := range r.procs {
			procs[p] = c
		}
	}
	g.mu.Unlock()
	if r == nil {
		return nil
	}
	var left []string
	for p, cmd := range containerProcesses(r.container) {
		procs[p] = cmd
	}
	for p, cmd := range procs {
		if docker.StartTime(p.pid) == p.start && procState(p.pid) != "Z" {
			left = append(left, "host process "+strconv.Itoa(p.pid)+" ("+clip([]byte(cmd))+")")
		}
	}
	for _, d := range containerCgroups(r.container) {
		left = append(left, "cgroup "+d)
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(mi), "\n") {
			if strings.Contains(l, r.container) {
				left = append(left, "mount "+l)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := g.cli.ContainerInspect(ctx, r.container); !cerrdefs.IsNotFound(err) {
		left = append(left, "container "+r.container)
	}
	for _, v := range r.volumes {
		if _, err := g.cli.VolumeInspect(ctx, v); !cerrdefs.IsNotFound(err) {
			left = append(left, "volume "+v)
		}
	}
	return left
}
