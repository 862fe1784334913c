package docker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// TestGVisorHostCheck checks the host check of gvisor runs itself
// (gvisorRuntime.RunProcesses): a run's sandbox is seen from the host while
// it runs (runsc's processes, the container's cgroups, the container) and
// nothing of it once Run has returned; and a gvisor container that stays
// (what a leak would look like) is reported, then no longer once removed.
func TestGVisorHostCheck(t *testing.T) {
	rt := newRuntime(t, docker.GVisorRuntime)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := docker.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	g := newGVisorRuntime(rt, cli)
	defer g.Close()

	tok := hostCheckToken(t)
	var during []string
	var seenAfter time.Duration
	start := time.Now()
	res, err := g.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: "import time\nprint('up', flush=True)\ntime.sleep(5)\n",
		Env:    map[string]string{hostTokenEnv: tok},
		Limits: sandbox.Limits{WallTimeMS: 30_000},
		OnOutput: func(sandbox.Stream, []byte) {
			for deadline := time.Now().Add(4 * time.Second); len(during) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				during = g.RunProcesses(tok)
				seenAfter = time.Since(start)
			}
		}})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("Run: %v, status %s (%s)", err, res.Status, res.Reason)
	}
	t.Logf("%s after the start of the run, the host held: %s", seenAfter.Round(time.Millisecond), strings.Join(during, "\n\t"))
	for _, want := range []string{"runsc-sandbox", "runsc-gofer", "cgroup /sys/fs/cgroup/", "container "} {
		if !strings.Contains(strings.Join(during, "\n"), want) {
			t.Errorf("while the run ran, nothing of %q was seen on the host: the check would prove nothing", want)
		}
	}
	if left := g.RunProcesses(tok); len(left) > 0 {
		t.Errorf("after the run, the host still holds: %s", strings.Join(left, "\n\t"))
	}

	// A gvisor container left running, known by a token as a run's is.
	img := imported.ref
	tok = hostCheckToken(t)
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Cmd: []string{"sleep", "60"},
		Labels: map[string]string{"org.crucible.sandbox": "1", "org.crucible.owner": docker.SelfOwner()}},
		&container.HostConfig{Runtime: docker.GVisorRuntime, NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatalf("create the leaked container: %v", err)
	}
	removed := false
	remove := func() {
		if !removed {
			removed = true
			_ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
	defer remove()
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start the leaked container: %v", err)
	}
	tokenContainers.Store(tok, c.ID) // as the runtime tells of a run's container
	done := make(chan struct{})
	go func() { time.Sleep(time.Second); close(done) }()
	g.watch(tok, done)
	g.mu.Lock()
	if r := g.runs[tok]; r != nil {
		r.ended = true
	}
	g.mu.Unlock()
	left := g.RunProcesses(tok)
	t.Logf("the leaked container's host side: %s", strings.Join(left, "\n\t"))
	if !strings.Contains(strings.Join(left, "\n"), "container "+c.ID) || !strings.Contains(strings.Join(left, "\n"), "runsc-sandbox") {
		t.Errorf("a gvisor container left running was not reported (container and its runsc sandbox): %v", left)
	}
	remove()
	if left := g.RunProcesses(tok); len(left) > 0 {
		t.Errorf("after the leaked container's removal, the host still holds: %s", strings.Join(left, "\n\t"))
	}
}

// hostCheckToken returns a fresh token.
func hostCheckToken(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "gvhc" + hex.EncodeToString(b)
}
