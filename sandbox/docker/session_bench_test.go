package docker_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// dockerRunSamples is how many cold `docker run`s the baseline times: each
// takes about half a second.
const dockerRunSamples = 10

// BenchmarkSessionCell times print(1) as a cell of a live session, for the
// docker and the gvisor runtime, against the baseline users know, measured
// in the same run: a cold `docker run --rm` of the same program in the
// same image with the hardening flags (and --runtime runsc for
// gvisor), through the docker CLI. Three phases (package benchtest): cells
// back to back (the benchmark's loop, b.N cells: the container is never
// paused between them), then cells after an idle gap (the container paused,
// so each pays the unpause), then the docker runs. It reports each phase's
// p50 and p99 and the ratios of the cells' medians to docker run's
// (x_docker_run, x_docker_run_idle).
func BenchmarkSessionCell(b *testing.B) {
	for _, r := range runtimes {
		b.Run(r.name, func(b *testing.B) {
			rt := newRuntime(b, r.oci)
			defer rt.Close()
			ctx := context.Background()
			ses, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
			if err != nil {
				b.Fatalf("NewSession: %v", err)
			}
			defer ses.Close()
			cell := func() time.Duration {
				t0 := time.Now()
				res, err := ses.Exec(ctx, sandbox.Cell{Code: "print(1)"})
				took := time.Since(t0)
				if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "1\n" {
					b.Fatalf("cell: %v %s %q %q", err, res.Status, res.Stdout, res.Reason)
				}
				return took
			}
			cell() // untimed: the first cell's imports
			cells := bt.Loop(b, nil, cell)
			idle := bt.Times(dockerRunSamples, func() { time.Sleep(10 * idleGap) }, cell)
			args := []string{"run", "--rm", "--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
				"--read-only", "--pids-limit", "64", "--memory", "256m", "-u", "65534"}
			if r.oci == docker.GVisorRuntime {
				args = append(args, "--runtime", "runsc")
			}
			args = append(args, imported.ref, "python3", "-c", "print(1)")
			dockerRun := func() time.Duration {
				t0 := time.Now()
				out, err := exec.Command("docker", args...).CombinedOutput()
				took := time.Since(t0)
				if err != nil || strings.TrimSpace(string(out)) != "1" {
					b.Fatalf("docker %s: %v %q", strings.Join(args, " "), err, out)
				}
				return took
			}
			dockerRun() // untimed
			runs := bt.Times(dockerRunSamples, nil, dockerRun)
			bt.Compare(b, cells, "cell", runs, "docker_run", "x_docker_run")
			idle.Report(b, "cell_idle")
			b.ReportMetric(bt.Ratio(idle, runs), "x_docker_run_idle")
		})
	}
}

// idleGap is longer than a session waits before it pauses its container.
const idleGap = 25 * time.Millisecond
