package eval_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/eval"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// benchWallMS is the per-sample wall-time limit of the benchmark, the
// reference harness's 3 s, in both modes.
const benchWallMS = 3_000

// BenchmarkCanonical measures evaluation throughput: HumanEval's 164
// canonical solutions evaluated by Runner on the native runtime
// (Concurrency = NumCPU, 3 s wall), against the same programs (built by
// eval.Program, each with its sentinel) run by a bare
// `/usr/bin/python3 FILE` each (no sandbox, an empty environment, files
// written beforehand) with the same concurrency. The runtime keeps
// sandboxes ready: NumCPU pre-started ones (each serves one run: a new
// sandbox and interpreter per sample), or twice as many zygote slots (each
// forks a run from its waiting interpreter; one slot resets while another
// serves), as `crucible eval` does. The two are timed in separate phases
// (package benchtest), b.N passes each: sandboxed (the benchmark's loop),
// each pass started once every pool is full (so that no pass pays for the
// resets and refills of the one before it), then bare, once the pools
// are full; each pass must pass all 164 (the sentinel on stdout), or the
// benchmark fails. It reports bare_samples_per_s, sandbox_samples_per_s
// and x_bare, the sandbox rate over the bare rate (higher is better, 1 is
// no overhead); ns/op is one sandboxed pass.
func BenchmarkCanonical(b *testing.B) {
	workers := runtime.NumCPU()
	for _, tc := range []struct {
		name string
		opts linux.Options
	}{
		{"prestart", linux.Options{Prestart: workers}},
		{"zygote", linux.Options{Warm: 2 * workers}},
	} {
		b.Run(tc.name, func(b *testing.B) { benchCanonical(b, workers, tc.opts) })
	}
}

func benchCanonical(b *testing.B, workers int, opts linux.Options) {
	rt := newRuntimeWith(b, opts)
	problems := loadProblems(b, testenv.Dataset(b, "humaneval"), "HumanEval.jsonl")
	samples, err := eval.CanonicalSamples(problems)
	if err != nil {
		b.Fatal(err)
	}
	runner := &eval.Runner{Runtime: rt, Concurrency: workers, Limits: sandbox.Limits{WallTimeMS: benchWallMS}}
	bare := writeBarePrograms(b, problems, samples)

	// Warm the page cache and the pool before timing anything.
	runBare(b, bare[:workers], workers)
	runSandboxed(b, runner, problems[:workers], samples[:workers])

	var bareTime, boxTime time.Duration
	for b.Loop() {
		b.StopTimer()
		bt.AwaitPools(b, rt)
		b.StartTimer()
		boxTime += runSandboxed(b, runner, problems, samples)
	}
	bt.AwaitPools(b, rt)
	for range b.N {
		bareTime += runBare(b, bare, workers)
	}
	n := float64(b.N * len(samples))
	bareRate, boxRate := n/bareTime.Seconds(), n/boxTime.Seconds()
	b.ReportMetric(bareRate, "bare_samples_per_s")
	b.ReportMetric(boxRate, "sandbox_samples_per_s")
	b.ReportMetric(boxRate/bareRate, "x_bare")
}

// bareProgram is a checked program written to a file for a bare run.
type bareProgram struct {
	taskID, path, sentinel string
}

// writeBarePrograms writes each sample's checked program, with a fresh
// sentinel of eval's form, to a temporary directory.
func writeBarePrograms(b *testing.B, problems []eval.Problem, samples []eval.Sample) []bareProgram {
	dir := b.TempDir()
	progs := make([]bareProgram, len(samples))
	for i, s := range samples {
		nonce := make([]byte, 16)
		_, _ = rand.Read(nonce)
		sentinel := "CRUCIBLE-EVAL-PASSED-" + hex.EncodeToString(nonce)
		path := filepath.Join(dir, fmt.Sprintf("p%03d.py", i))
		if err := os.WriteFile(path, []byte(eval.Program(problems[i], s, sentinel)), 0o644); err != nil {
			b.Fatal(err)
		}
		progs[i] = bareProgram{taskID: s.TaskID, path: path, sentinel: sentinel}
	}
	return progs
}

// runBare runs progs with workers at a time and returns the time taken;
// every program must print its sentinel within the wall-time limit.
func runBare(b *testing.B, progs []bareProgram, workers int) time.Duration {
	jobs := make(chan bareProgram)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for p := range jobs {
				ctx, cancel := context.WithTimeout(context.Background(), benchWallMS*time.Millisecond)
				cmd := exec.CommandContext(ctx, "/usr/bin/python3", p.path)
				cmd.Env = []string{}
				cmd.Dir = filepath.Dir(p.path)
				out, err := cmd.Output()
				cancel()
				if err != nil || !strings.Contains(string(out), p.sentinel+"\n") {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v, stdout %q", p.taskID, err, out))
					mu.Unlock()
				}
			}
		})
	}
	for _, p := range progs {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	if len(failures) > 0 {
		b.Fatalf("bare runs failed:\n%s", strings.Join(failures, "\n"))
	}
	return elapsed
}

// runSandboxed evaluates samples with runner and returns the time taken;
// every sample must pass.
func runSandboxed(b *testing.B, runner *eval.Runner, problems []eval.Problem, samples []eval.Sample) time.Duration {
	start := time.Now()
	results, err := runner.Run(context.Background(), problems, samples)
	elapsed := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range results {
		if !r.Passed {
			b.Errorf("%s: %s (status %s, reason %q, error %+v)", r.TaskID, r.Outcome, r.Status, r.Reason, r.Error)
		}
	}
	if b.Failed() {
		b.FailNow()
	}
	return elapsed
}
