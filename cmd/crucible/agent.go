package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
)

// agentFlags are the flags of `crucible agent`.
type agentFlags struct {
	agentSetup
	files      []string
	out        string
	jsonOut    bool
	testDriven bool
}

func newAgentCommand() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use: `agent "TASK"`,
		Example: `  # A task for a local OpenAI-compatible server (Ollama, vLLM, llama.cpp)
  crucible agent --base-url http://localhost:11434/v1 --model qwen2.5-coder "sum of the primes below 1000"

  # With Anthropic, a data file, the data-science image, and charts saved in ./out
  ANTHROPIC_API_KEY=... crucible agent --provider anthropic --image datascience \
      --file sales.csv=./sales.csv --out out "plot monthly revenue from sales.csv"

  # Ask before each program runs
  crucible agent --approve "list the first 20 Fibonacci numbers"`,
		Short: "Let a model solve a task by writing and running code in a sandbox",
		Long: `Give a task in plain language. A language model writes Python, Crucible runs
it in a sandboxed session, the model reads the result and fixes its errors, a
verifier checks the output answers the task, and you get the answer with the
code and output that support it.

The model: --provider openai (any OpenAI-compatible endpoint: --base-url for
Ollama, vLLM, llama.cpp's server) or anthropic; or the environment:
OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, CRUCIBLE_MODEL,
CRUCIBLE_PROVIDER. A missing key or a bad URL is reported before any work.

Every execution goes through the same pipeline as the HTTP API: its output
is redacted before the model sees it (credential patterns, and the secrets
and host paths of --config's "redact", as for crucible serve), and it is
recorded in --db as a run linked to the agent run (the trace's ID).

The code runs in the data-science image (pandas, matplotlib, scipy...) when
it is built (crucible image build), else in the host's directories; --image
chooses. The summary counts attempts as the progress lines number them.

The summary's status: answered; unverified (an answer whose verifier gave no
verdict that could be read, even when asked again: the answer is marked
UNVERIFIED); budget_exhausted; refused (the model declined the task); denied
(--approve); failed. A run that ends answered or unverified exits 0, one
that ends with another status 1.

The model's answer and code and the programs' output are shown on a terminal
with escape sequences as visible escapes (\x1b), unless --raw-output; the
code --approve asks about always is. Artifacts are saved in --out under
cleaned names, never replacing a file (see crucible session --help).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgent(cmd.Context(), &f, args[0], newDisplay(cmd))
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.files, "file", nil, "input file NAME=PATH placed in the working directory (repeatable)")
	f.addFlags(fl, 1<<30)
	fl.StringVar(&f.out, "out", "crucible-out", "directory for the artifacts of the answer")
	fl.BoolVar(&f.jsonOut, "json", false, "print the whole trace as JSON")
	fl.BoolVar(&f.testDriven, "tdd", false, "test-driven: the model must run a reference solution with example and property tests before answering")
	addRawOutputFlag(fl)
	return cmd
}

func runAgent(ctx context.Context, f *agentFlags, task string, d *display) error {
	model, err := f.model()
	if err != nil {
		return err
	}
	files, err := readFileFlags(f.files)
	if err != nil {
		return usageError(err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := f.start(ctx, d, "agent", service.AgentConfig{})
	if err != nil {
		return err
	}
	defer p.close()
	id := agent.NewRunID()
	cfg := agent.Config{
		ID: id, Model: model, Sandbox: p.svc.SessionRuntime(server.DefaultTenant, id), TextMode: f.textMode, TestDriven: f.testDriven, MaxRetries: f.retries(), CellTimeout: f.timeout,
		SessionLimits: sandbox.Limits{MemoryBytes: f.memory, WallTimeMS: f.timeout.Milliseconds(), CPUTimeMS: f.timeout.Milliseconds()},
		OnEvent:       func(e agent.Event) { d.say("agent: attempt %d · %s", e.Attempt, e.Message) },
		Approve:       f.approver(os.Stdin),
	}
	trace, err := agent.Run(ctx, cfg, agent.Task{Prompt: task, Files: files})
	if err != nil {
		d.status("crucible: %v", err)
		return exitCodeError(exitInternal)
	}
	if f.jsonOut {
		enc := json.NewEncoder(d.stdout) // inert on a terminal, and still the same JSON
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(trace); err != nil {
			return err
		}
		d.stdout.flush()
	} else {
		printTrace(d, trace, f.out)
	}
	if !trace.Status.HasAnswer() {
		return exitCodeError(1)
	}
	return nil
}

// approveOn returns an approver that shows the code on prompt (the
// terminal) and reads y/n from in.
//
// Security: the code is the model's, and the person approves what they
// see, so it is always shown inert, --raw-output or not: an escape sequence
// could conceal a line, a \r overwrite one, a bidirectional override
// reorder one.
func approveOn(in io.Reader, prompt io.Writer) func(context.Context, string) (bool, error) {
	// One reader for every question: what it buffered past an answer
	// (answers typed ahead) is the next questions'.
	answers := bufio.NewReader(in)
	return func(ctx context.Context, code string) (bool, error) {
		fmt.Fprintf(prompt, "\n--- the agent wants to run ---\n%s\n------------------------------\nrun it? [y/N] ", inert(code))
		line, err := answers.ReadString('\n')
		if err != nil && line == "" {
			return false, nil
		}
		answer := strings.ToLower(strings.TrimSpace(line))
		return answer == "y" || answer == "yes", nil
	}
}

// printTrace shows the outcome for a person on d's stdout and saves the
// artifacts in out. Everything but the labels is the model's or a
// program's, so it goes through d.
func printTrace(d *display, t *agent.Trace, out string) {
	w := d.stdout
	printOutcome(w, t.Status, t.Reason, t.Answer, t.Code, t.Output)
	for _, a := range t.Artifacts {
		if why := unsavedReason(a); why != "" {
			fmt.Fprintf(w, "artifact %s not saved: %s\n", a.Name, why)
			continue
		}
		if dst, err := saveNew(out, a.Name, a.Content); err != nil {
			fmt.Fprintf(w, "artifact %s not saved: %v\n", a.Name, err)
		} else {
			fmt.Fprintf(w, "artifact: %s (%s)\n", dst, a.MIME)
		}
	}
	b := t.Budget
	fmt.Fprintf(w, "\nattempts %d/%d (%d failed) · tokens %d · execution %.0f ms · %d steps · trace %s\n", b.Attempts, b.MaxAttempts, b.FailedAttempts, b.Tokens, b.ExecMS, len(t.Steps), t.ID)
	w.flush()
}

// printOutcome shows how an agent's work ended on w: its status and
// reason, the answer (marked when unverified), and the code and output
// behind it. Shared by crucible agent and crucible analyst.
func printOutcome(w io.Writer, status agent.Status, reason, answer, code, output string) {
	fmt.Fprintf(w, "status: %s", status)
	if reason != "" {
		fmt.Fprintf(w, " (%s)", reason)
	}
	fmt.Fprintln(w)
	switch {
	case answer == "":
	case status == agent.StatusUnverified:
		fmt.Fprintf(w, "\nanswer (UNVERIFIED: not checked by the verifier):\n%s\n", answer)
	default:
		fmt.Fprintf(w, "\nanswer:\n%s\n", answer)
	}
	if code != "" {
		fmt.Fprintf(w, "\ncode:\n%s\n", strings.TrimRight(code, "\n"))
	}
	if output != "" {
		fmt.Fprintf(w, "\noutput:\n%s\n", strings.TrimRight(output, "\n"))
	}
}
