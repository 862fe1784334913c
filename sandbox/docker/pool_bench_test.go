package docker_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// BenchmarkPooledRun times a pooled run of print(1) through the API (the
// op), and in the same iterations the baseline users know, `docker run` of
// the same program through the docker CLI with the flags (the
// runtime's own for gvisor), and a cold run of this package. It reports
// each one's mean in ms and the ratios pooled/docker-run (the target:
// ≤ 0.25) and cold/docker-run. The pool is refilled between iterations,
// off the clock: a pooled run is one that finds a container ready.
//
//	go test -tags crucible_initexe -run '^$' -bench PooledRun -benchtime 20x ./sandbox/docker/
func BenchmarkPooledRun(b *testing.B) {
	for _, r := range runtimes {
		b.Run(r.name, func(b *testing.B) {
			cold := newRuntime(b, r.oci)
			defer cold.Close()
			rt, _ := newPooledRuntime(b, r.oci, 1)
			defer rt.Close()
			args := []string{"run", "--rm", "--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
				"--read-only", "--pids-limit", "64", "--memory", "256m", "-u", "65534"}
			if r.oci == docker.GVisorRuntime {
				args = append(args, "--runtime", docker.GVisorRuntime)
			}
			args = append(args, imported.ref, "python3", "-c", "print(1)")
			req := sandbox.Request{Language: sandbox.Python, Code: "print(1)"}
			ctx := context.Background()
			var dockerRun, pooled, coldRun time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				t0 := time.Now()
				if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil || string(out) != "1\n" {
					b.Fatalf("docker %v: %v: %q", args, err, out)
				}
				dockerRun += time.Since(t0)
				t0 = time.Now()
				if res, err := cold.Run(ctx, req); err != nil || string(res.Stdout) != "1\n" {
					b.Fatalf("cold Run: %v, %s %q", err, res.Status, res.Stdout)
				}
				coldRun += time.Since(t0)
				waitReady(b, rt, 1)
				b.StartTimer()
				t0 = time.Now()
				res, err := rt.Run(ctx, req)
				pooled += time.Since(t0)
				if err != nil || string(res.Stdout) != "1\n" {
					b.Fatalf("pooled Run: %v, %s %q", err, res.Status, res.Stdout)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(dockerRun.Milliseconds())/n, "docker-run-ms")
			b.ReportMetric(float64(coldRun.Milliseconds())/n, "cold-ms")
			b.ReportMetric(float64(pooled.Milliseconds())/n, "pooled-ms")
			b.ReportMetric(float64(pooled)/float64(dockerRun), "pooled/docker-run")
			b.ReportMetric(float64(coldRun)/float64(dockerRun), "cold/docker-run")
		})
	}
}
