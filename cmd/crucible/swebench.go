package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/swe"
)

// sweBenchFlags are the flags of `crucible swe-bench`.
type sweBenchFlags struct {
	agentSetup
	quixbugs    string
	tasks       int
	only        []string
	concurrency int
	maxSteps    int
	maxWall     time.Duration
	jsonOut     bool
}

func newSWEBenchCommand() *cobra.Command {
	var f sweBenchFlags
	cmd := &cobra.Command{
		Use: "swe-bench [--quixbugs DIR] [--tasks N | --only NAME...]",
		Example: `  # Every QuixBugs task with a local OpenAI-compatible server, two at a time
  crucible swe-bench --quixbugs ../shared/datasets/quixbugs --base-url http://localhost:11434/v1 --model qwen2.5-coder

  # Three tasks, the results as JSON
  crucible swe-bench --only bitcount,flatten,sieve --json`,
		Short: "Run the software-engineering agent on real bugs (QuixBugs) and report what it resolved",
		Long: `Give the software-engineering agent (crucible swe) one task per program of a
QuixBugs folder (the Python part: python_programs, correct_python_programs,
python_testcases, json_testcases) and report each task resolved or not, with
the reason, and the summary (resolved k/n, wall time).

A task's repository holds the buggy program, the correct versions of the next
two programs (by name, wrapping round) and the three programs' tests; the task
says "The tests in python_testcases/test_NAME.py fail. Fix the bug in
python_programs/NAME.py." The test command is
  ` + swe.QuixBugsTestCommand + `
and the named tests are the three test files: a change resolves the task only
when, applied to a pristine copy in a fresh sandbox, every one of their tests
passes. A change to a test file is refused (tests_edited); one that breaks a
neighbour is unresolved and names the broken tests.

--quixbugs defaults to $CRUCIBLE_DATASETS/quixbugs. The model is configured as
for crucible agent: --provider, --model, --base-url, --api-key or the
environment (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY,
CRUCIBLE_MODEL, CRUCIBLE_PROVIDER). Every execution goes through the HTTP API's
pipeline (redaction, records in --db). --timeout bounds each tool call and
test run, in wall and CPU time (a buggy program's tests may hang: each hanging
test runs to pytest-timeout's 10 s).

Exit code: 0 when every task was judged (whatever was resolved), 2 for bad
input, 70 when the platform failed on some task, 130 when interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSWEBench(cmd.Context(), &f, newDisplay(cmd))
		},
	}
	fl := cmd.Flags()
	f.addFlags(fl, 1<<30)
	// A buggy program's tests can take long (each hanging test runs to
	// pytest-timeout's limit): a tool call gets the agent's default.
	f.timeout = swe.DefaultCallTimeout
	fl.Lookup("timeout").DefValue = swe.DefaultCallTimeout.String()
	fl.StringVar(&f.quixbugs, "quixbugs", "", "QuixBugs folder (default $CRUCIBLE_DATASETS/quixbugs)")
	fl.IntVar(&f.tasks, "tasks", 0, "run only the first N tasks (by name; 0 for all)")
	fl.StringSliceVar(&f.only, "only", nil, "run only the tasks of these program names (comma-separated or repeated)")
	fl.IntVar(&f.concurrency, "concurrency", swe.DefaultBenchConcurrency, "tasks run at once")
	fl.IntVar(&f.maxSteps, "max-steps", swe.DefaultMaxSteps, "model turns allowed per task")
	durationVar(fl, &f.maxWall, "max-wall", swe.DefaultMaxWallTime, "wall time allowed per task, verification included")
	fl.BoolVar(&f.jsonOut, "json", false, "print the report (every task and the summary) as JSON on stdout")
	addRawOutputFlag(fl)
	return cmd
}

func runSWEBench(ctx context.Context, f *sweBenchFlags, d *display) error {
	switch {
	case f.concurrency < 1:
		return usageError(fmt.Errorf("--concurrency must be at least 1, got %d", f.concurrency))
	case f.maxSteps < 1:
		return usageError(fmt.Errorf("--max-steps must be at least 1, got %d", f.maxSteps))
	case f.approve:
		return usageError(fmt.Errorf("--approve: swe-bench runs unattended, tasks at once; use crucible swe to approve commands"))
	}
	dir := f.quixbugs
	if dir == "" {
		root := os.Getenv("CRUCIBLE_DATASETS")
		if root == "" {
			return usageError(fmt.Errorf("--quixbugs is required (or set CRUCIBLE_DATASETS to the directory holding quixbugs/)"))
		}
		dir = filepath.Join(root, "quixbugs")
	}
	model, err := f.model()
	if err != nil {
		return err
	}
	all, err := swe.QuixBugs(dir)
	if err != nil {
		return usageError(err)
	}
	tasks, err := swe.SelectBenchTasks(all, f.tasks, f.only)
	if err != nil {
		return usageError(fmt.Errorf("--%w", err))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := f.start(ctx, d, "swe-bench", service.AgentConfig{})
	if err != nil {
		return err
	}
	defer p.close()
	// Every task's sessions are the service's, recorded and linked to the
	// benchmark's ID, their output redacted before the model sees it.
	id := agent.NewRunID()
	cfg := swe.BenchConfig{
		Config: swe.Config{ID: id, Model: model, Sandbox: p.svc.SessionRuntime(server.DefaultTenant, id), TextMode: f.textMode,
			SessionLimits: sandbox.Limits{MemoryBytes: f.memory, WallTimeMS: f.timeout.Milliseconds(), CPUTimeMS: f.timeout.Milliseconds()}, MaxSteps: f.maxSteps, MaxWallTime: f.maxWall, CallTimeout: f.timeout},
		Concurrency: f.concurrency,
		OnResult:    func(r swe.BenchResult) { d.say("swe-bench: %s", benchLine(r)) },
	}
	d.say("swe-bench: %d tasks from %s, %d at once (run %s)", len(tasks), dir, f.concurrency, id)
	rep, runErr := swe.Bench(ctx, cfg, tasks)
	if runErr != nil && ctx.Err() == nil {
		return usageError(runErr)
	}
	if f.jsonOut {
		enc := json.NewEncoder(d.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
		d.stdout.flush()
	} else {
		printBenchReport(d, rep)
	}
	platform := 0
	for _, r := range rep.Results {
		if r.Result == nil {
			platform++
		}
	}
	switch {
	case ctx.Err() != nil:
		d.say("crucible: interrupted; the report covers the tasks that ended")
		return exitCodeError(exitSignalOffset + int(syscall.SIGINT))
	case platform > 0:
		d.say("crucible: the platform failed on %d tasks; the benchmark is incomplete", platform)
		return exitCodeError(exitInternal)
	}
	return nil
}
