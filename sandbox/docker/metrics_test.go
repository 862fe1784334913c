package docker_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// TestShortRunMetrics: a run shorter than the CPU watch's interval still
// reports its CPU time and peak memory where the container's cgroup v1
// files are at hand (this host's daemon, cgroup v1): the run's end takes
// one last sample from them.
func TestShortRunMetrics(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup/cpuacct"); err != nil {
		t.Skip("not a cgroup v1 host: the metrics come from the daemon's statistics")
	}
	rt := newRuntime(t, docker.RuncRuntime)
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: "print(1)"})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("Run: %v, status %s (%s)", err, res.Status, res.Reason)
	}
	if res.Metrics.CPUMS <= 0 || res.Metrics.PeakMemoryBytes <= 0 {
		t.Errorf("metrics: cpu %.1f ms, peak %d bytes; want both above zero", res.Metrics.CPUMS, res.Metrics.PeakMemoryBytes)
	}
}
