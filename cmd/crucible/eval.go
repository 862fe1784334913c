package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/crucible-sandbox/crucible/eval"
	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// evalFlags are the flags of `crucible eval`.
type evalFlags struct {
	problems    string
	samples     string
	ks          string
	timeout     time.Duration
	memory      int64
	concurrency int
	out         string
	rootfs      string
	image       string
	store       string
	jsonOut     bool
	runtime     runtimeChoice
}

// evalReport is what --json prints.
type evalReport struct {
	eval.Summary
	DurationS        float64 `json:"duration_s"`
	SamplesPerSecond float64 `json:"samples_per_second"`
}

func newEvalCommand() *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use: "eval --problems PROBLEMS.jsonl --samples SAMPLES.jsonl",
		Example: `  # Check the harness: every canonical solution should pass
  crucible eval --problems HumanEval.jsonl.gz --samples canonical

  # Score a model's completions, pass@1 and pass@10, details to a file
  crucible eval --problems HumanEval.jsonl.gz --samples samples.jsonl --k 1,10 --out results.jsonl`,
		Short: "Run benchmark samples (HumanEval format) in sandboxes and report pass@k",
		Long: `Run every sample with its problem's tests in a sandbox of its own and report
pass@k (the unbiased estimator). A Python sample runs in a fork of a zygote
slot's waiting interpreter (its own working directory, /tmp, cgroup and user,
the slot reset after it; see Pools in docs/sandbox.md), or in a fresh pre-started
sandbox when it does not fit one. Samples are JSON lines with task_id and
completion (continuing the problem's prompt) or solution (a whole program);
--samples canonical evaluates the problems' own canonical solutions.

A sample passes only when the tests return and a random sentinel printed after
them appears: exiting early, killing the interpreter or deleting check fails.

Exit code: 0 when every sample was judged (whatever the pass rate), 2 for bad
input (reported with file and line; nothing runs), 70 when the platform failed
on some sample, 130 when interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runEval(cmd.Context(), &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.problems, "problems", "", "problems file (JSON lines: task_id, prompt, entry_point, test; plain or gzip, as HumanEval.jsonl.gz)")
	fl.StringVar(&f.samples, "samples", "", `samples file (JSON lines: task_id + completion or solution; plain or gzip), or "canonical"`)
	fl.StringVar(&f.ks, "k", "1,10,100", "comma-separated k values for pass@k")
	durationVar(fl, &f.timeout, "timeout", 3*time.Second, "wall-time limit per sample")
	sizeVar(fl, &f.memory, "memory", 256<<20, "memory limit per sample")
	fl.IntVar(&f.concurrency, "concurrency", runtime.NumCPU(), "samples run at once")
	fl.StringVar(&f.out, "out", "", "write per-sample results here as JSON lines")
	fl.StringVar(&f.rootfs, "rootfs", "", "root filesystem directory (default: the host's system directories, read-only)")
	fl.StringVar(&f.image, "image", "", "run in the built image `NAME` (list them with: crucible image ls)")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	fl.BoolVar(&f.jsonOut, "json", false, "print the summary as JSON and nothing else on stdout")
	f.runtime.addFlags(fl)
	_ = cmd.MarkFlagRequired("problems")
	_ = cmd.MarkFlagRequired("samples")
	return cmd
}

func runEval(ctx context.Context, f *evalFlags) error {
	ks, err := parseKs(f.ks)
	if err != nil {
		return usageError(err)
	}
	if f.concurrency < 1 {
		return usageError(fmt.Errorf("--concurrency must be at least 1, got %d", f.concurrency))
	}
	if err := f.runtime.check(); err != nil {
		return err
	}
	mem := f.memory
	limits := sandbox.Limits{WallTimeMS: f.timeout.Milliseconds(), CPUTimeMS: f.timeout.Milliseconds(), MemoryBytes: mem}
	if err := limits.Validate(); err != nil {
		return usageError(err)
	}
	problems, err := eval.LoadProblems(f.problems)
	if err != nil {
		return usageError(err)
	}
	var samples []eval.Sample
	if f.samples == "canonical" {
		samples, err = eval.CanonicalSamples(problems)
	} else {
		samples, err = eval.LoadSamples(f.samples, problems)
	}
	if err != nil {
		return usageError(err)
	}
	var out *os.File
	if f.out != "" {
		if out, err = os.Create(f.out); err != nil {
			return usageError(err)
		}
		defer out.Close()
	}
	// Twice as many zygote slots as samples at once: a slot resets after
	// each run, and the next sample takes another meanwhile.
	rt, err := f.runtime.start(ctx, f.rootfs, f.image, f.store, runtimeSettings{warm: func(string) int { return 2 * f.concurrency }, prestart: f.concurrency})
	if err != nil {
		return err
	}
	defer rt.close()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	bar := newProgress(len(samples))
	passed := 0
	var writeErr error
	runner := &eval.Runner{
		Runtime:     rt.Runtime,
		Concurrency: f.concurrency,
		Limits:      limits,
		OnResult: func(r eval.SampleResult) {
			if r.Passed {
				passed++
			}
			if out != nil && writeErr == nil {
				writeErr = writeJSONLine(out, r)
			}
			bar.Describe(fmt.Sprintf("passed %d", passed))
			_ = bar.Add(1)
		},
	}
	start := time.Now()
	results, runErr := runner.Run(ctx, problems, samples)
	elapsed := time.Since(start)
	_ = bar.Finish()
	if runErr != nil && ctx.Err() == nil {
		return usageError(runErr)
	}
	if writeErr != nil {
		fmt.Fprintln(os.Stderr, "crucible: writing results:", writeErr)
		return exitCodeError(exitInternal)
	}
	rep := evalReport{Summary: eval.Summarize(problems, results, ks), DurationS: elapsed.Seconds()}
	rep.SamplesPerSecond = float64(len(samples)-rep.Outcomes[eval.OutcomeNotRun]) / elapsed.Seconds()
	if f.jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printEvalSummary(os.Stdout, rep)
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "crucible: interrupted; the summary covers the samples judged so far")
		return exitCodeError(exitSignalOffset + int(syscall.SIGINT))
	case rep.Outcomes[eval.OutcomeInternal] > 0:
		fmt.Fprintf(os.Stderr, "crucible: the platform failed on %d samples; the evaluation is incomplete\n", rep.Outcomes[eval.OutcomeInternal])
		return exitCodeError(exitInternal)
	}
	return nil
}

// parseKs parses "1,10,100".
func parseKs(s string) ([]int, error) {
	var ks []int
	for _, part := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("--k %q: want comma-separated positive integers such as 1,10,100", s)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// newProgress draws a progress bar with rate and ETA on a terminal, and
// nothing otherwise.
func newProgress(total int) *progressbar.ProgressBar {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return progressbar.DefaultSilent(int64(total))
	}
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("samples"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)
}

func printEvalSummary(w io.Writer, rep evalReport) {
	fmt.Fprintf(w, "%s of %s in %.1f s (%.1f samples/s)\n", plural(rep.Samples, "sample"), plural(rep.Problems, "problem"), rep.DurationS, rep.SamplesPerSecond)
	outcomes := make([]string, 0, len(rep.Outcomes))
	for o := range rep.Outcomes {
		outcomes = append(outcomes, string(o))
	}
	sort.Strings(outcomes)
	for _, o := range outcomes {
		fmt.Fprintf(w, "  %-13s %d\n", o, rep.Outcomes[eval.Outcome(o)])
	}
	keys := make([]string, 0, len(rep.PassAtK))
	for k := range rep.PassAtK {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return len(keys[i]) < len(keys[j]) || len(keys[i]) == len(keys[j]) && keys[i] < keys[j]
	})
	for _, k := range keys {
		fmt.Fprintf(w, "%-9s %.4f\n", k, rep.PassAtK[k])
	}
	for _, sk := range rep.Skipped {
		fmt.Fprintf(w, "%-9s not computed: %s; pass@k needs at least k samples of every problem: add samples, or leave %d out of --k\n",
			fmt.Sprintf("pass@%d", sk.K), sk.Reason(rep.Problems), sk.K)
	}
	if len(rep.Skipped) > 0 && rep.Outcomes[eval.OutcomeNotRun] > 0 {
		fmt.Fprintf(w, "          (the %d samples not run are not counted)\n", rep.Outcomes[eval.OutcomeNotRun])
	}
}

// plural writes "1 sample", "2 samples".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
