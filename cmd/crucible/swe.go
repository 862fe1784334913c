package main

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/swe"
)

// sweFlags are the flags of `crucible swe`.
type sweFlags struct {
	agentSetup
	testCmd   string
	tests     []string
	maxSteps  int
	maxWall   time.Duration
	out       string
	jsonOut   bool
	server    string
	serverKey string
	// changed reports whether a flag was given: a run on --server leaves
	// the others to the server's defaults.
	changed func(name string) bool
}

func newSWECommand() *cobra.Command {
	var f sweFlags
	cmd := &cobra.Command{
		Use: `swe REPO "TASK"`,
		Example: `  # Fix a bug in ./repo with a local OpenAI-compatible server; save the change
  crucible swe --base-url http://localhost:11434/v1 --model qwen2.5-coder \
      ./repo "fix the failing test in test_x.py" --out fix.patch
  git -C ./repo apply "$PWD/fix.patch"

  # Name the tests that must pass (their files may then not be edited) and the command
  ANTHROPIC_API_KEY=... crucible swe --provider anthropic ./repo "quicksort drops duplicates" \
      --test tests/test_sort.py::test_duplicates --test-cmd "python3 -m pytest -q tests"

  # A git bundle or a tarball; ask before each command; against a server
  crucible swe --server http://127.0.0.1:8080 --approve repo.bundle "fix issue 12"`,
		Short: "Let a model change a repository until its failing tests pass",
		Long: `Give a repository and a task in plain language. A language model works on a
copy of the repository in a sandbox session of its own, with tools to run
bash commands, view, search and edit files and run the tests, and submits a
change. A fresh sandbox then applies the change to a pristine copy and runs
the tests there: that is the verdict, never the model's claim.

REPO is a directory (packed as it is, without its .git; it is never changed:
the agent works on a copy in the sandbox), a git bundle (.bundle: its HEAD)
or a tarball (.tar, .tar.gz, .tgz). --test-cmd runs the tests from the
repository's root (default "python3 -m pytest -q"); each --test names a test
that must pass (a pytest node ID such as tests/test_x.py::test_y, or a test
file): a change to a named test's file is refused. Without --test every test
the command runs must pass.

The model is configured as for crucible agent: --provider, --base-url,
--model, --api-key or OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY,
CRUCIBLE_MODEL, CRUCIBLE_PROVIDER. The run is an agent run of mode swe of
the platform's service in this process, as crucible serve runs one: each
command checked by the code policy (warn: findings shown), what the
model sees redacted, the run and every execution recorded in --db (a
crucible serve on that store shows it). With --server URL it is an agent
run of that server instead, with its model (--server-key or
CRUCIBLE_API_KEY is the API key).

Progress goes to stderr: each step, each command and its output. Then the
result on stdout: the status and its reason, the tests before and after
(fail_to_pass: failing before, passing after; broken: passing before,
failing after), and the change as a unified diff (coloured on a terminal,
with escape sequences shown as visible escapes). --out writes the change to
a new file, for git apply. --json prints the whole result with its trace.

The status: resolved (exit 0); unresolved or tests_edited (a change that
did not pass, or that edits a named test: exit 1); no_change,
budget_exhausted, looping, refused, denied (no change to verify: exit 3);
failed (the model or the platform failed: exit 70). Bad input exits 2
before anything runs.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.changed = cmd.Flags().Changed
			return runSWE(cmd.Context(), &f, args[0], args[1], newDisplay(cmd))
		},
	}
	fl := cmd.Flags()
	f.addFlags(fl, 2<<30)
	// The code agent's retries do not apply: the steps bound this agent.
	_ = fl.MarkHidden("max-retries")
	f.timeout = swe.DefaultCallTimeout
	fl.Lookup("timeout").DefValue = swe.DefaultCallTimeout.String()
	fl.Lookup("timeout").Usage = "wall-time limit of each command and test run"
	fl.Lookup("approve").Usage = "show each command and test run and ask before it runs"
	fl.Lookup("text-mode").Usage = "ask for tool calls written as text instead of native ones (models without tool calling)"
	fl.StringVar(&f.testCmd, "test-cmd", "", `the command that runs the tests from the repository's root (default "python3 -m pytest -q")`)
	fl.StringArrayVar(&f.tests, "test", nil, "a test that must pass: a pytest node ID or a test file (repeatable)")
	fl.IntVar(&f.maxSteps, "max-steps", swe.DefaultMaxSteps, "the model's turns at most")
	durationVar(fl, &f.maxWall, "max-wall", swe.DefaultMaxWallTime, "wall-time limit of the whole run, verification included")
	fl.StringVar(&f.out, "out", "", "write the change to this new file (a patch for git apply)")
	fl.BoolVar(&f.jsonOut, "json", false, "print the whole result, with its trace, as JSON")
	fl.StringVar(&f.server, "server", "", "run on this Crucible server (its URL) instead of here")
	fl.StringVar(&f.serverKey, "server-key", "", "the server's API key (default $CRUCIBLE_API_KEY)")
	addRawOutputFlag(fl)
	return cmd
}

// runSWE checks the input, runs the agent here or on --server, and prints
// the result; the error carries the exit code.
func runSWE(ctx context.Context, f *sweFlags, repoArg, prompt string, d *display) error {
	task, err := f.task(repoArg, prompt)
	if err != nil {
		return usageError(err)
	}
	if err := checkNewFile("--out", f.out); err != nil {
		return usageError(err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var res *swe.Result
	if f.server != "" {
		res, err = runSWERemote(ctx, f, task, d)
	} else {
		res, err = runSWELocal(ctx, f, task, d)
	}
	if err != nil {
		return err
	}
	if f.jsonOut {
		enc := json.NewEncoder(d.stdout) // inert on a terminal, and still the same JSON
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return err
		}
		d.stdout.flush()
	} else {
		printSWEResult(d, res)
	}
	if f.out != "" && res.Diff != "" {
		if err := createNew(f.out, []byte(res.Diff)); err != nil {
			return platformError(err)
		}
		d.say("swe: the change is in %s (git apply %s)", f.out, f.out)
	}
	return sweExit(res.Status)
}

// sweExit maps a run's status to the command's exit.
func sweExit(s swe.Status) error {
	switch s {
	case swe.StatusResolved:
		return nil
	case swe.StatusUnresolved, swe.StatusTestsEdited:
		return exitCodeError(exitSWEUnresolved)
	case swe.StatusFailed:
		return exitCodeError(exitInternal)
	}
	return exitCodeError(exitSWENoChange)
}

// The exit codes of crucible swe beyond 0 (resolved), 2 (usage) and 70
// (failed).
const (
	exitSWEUnresolved = 1 // a change that did not pass, or that edits a named test
	exitSWENoChange   = 3 // no change to verify: no_change, budget_exhausted, looping, refused, denied
)
