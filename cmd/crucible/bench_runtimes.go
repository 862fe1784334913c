//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// benchRuntimesFlags are the flags of `crucible bench runtimes`.
type benchRuntimesFlags struct {
	runtimes []string
	// named is set when --runtime was given: a runtime it names that the
	// host lacks is an error, not a row reported unavailable.
	named    bool
	image    string
	store    string
	runs     int
	duration time.Duration
	jsonOut  bool
}

// benchRuntimesDefaultRuns is --runs' default.
const benchRuntimesDefaultRuns = 20

func newBenchRuntimesCommand() *cobra.Command {
	var f benchRuntimesFlags
	cmd := &cobra.Command{
		Use: "runtimes",
		Example: `  # Every runtime this host has, 20 rounds
  crucible bench runtimes

  crucible bench runtimes --runtime native,gvisor --duration 1m --json`,
		Short: "Compare the native, docker and gvisor runtimes with bare python3 and docker run",
		Long: `Compare the runtimes --runtime names (native, docker, gvisor; by default
every one) running print(1) in Python on --image, with the baselines
measured in the same run. The rows:

  bare            the image's /usr/bin/python3 -c 'print(1)', chrooted into
                  its root filesystem, an empty environment, no sandbox
  docker run      docker run --rm ` + dockerRunProfile + ` IMAGE
                  python3 -c 'print(1)' (the seeds' production profile), IMAGE
                  the Crucible image imported into Docker
  docker run runsc  the same with --runtime runsc (gVisor)
  RUNTIME cold    a run in a fresh sandbox, nothing kept warm
  RUNTIME pooled  a run taken from what the runtime keeps ready: the native
                  runtime's warm zygote slot and prestarted sandbox, the
                  docker and gvisor runtimes' pre-created containers
  RUNTIME pooled API  the same pooled runtime served by the API server
                  started in this process on a loopback port (as crucible
                  serve chains them): POST /v1/runs?cache=0 from the Go SDK,
                  timed to its answer: the row the targets compare
  RUNTIME session a cell in a session opened beforehand

A round runs each row once, in that order, every call on a resting host:
before each, untimed, every row's pools are refilled. One untimed round
warms the page cache first; then --runs rounds, or rounds until --duration
has passed. For each row it reports the runs, those that failed (each must
end ok printing 1; through the API, without the server logging a warning),
the latency's median (p50), p90 and maximum, and the ratio of its
median to docker run's, to docker run runsc's and to bare's. Then the
targets: docker pooled API at most 0.25× docker run, gvisor pooled API at
most 0.25× docker run runsc.

A runtime this host lacks (no root for native; no Docker daemon, no runsc
registered, no docker CLI) is reported, its rows not measured, unless
--runtime named it: then it is an error. A row the runtime cannot measure yet
is reported not measured, with the reason.

--json prints one JSON document instead of the table. Progress goes to stderr.

Exit code: 0 when every measured run printed 1, 70 when one did not, 2 for
bad flags or a named runtime missing, 130 when interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			f.named = fl.Changed("runtime")
			if fl.Changed("runs") && fl.Changed("duration") {
				return usageError(errors.New("give --runs or --duration, not both"))
			}
			if fl.Changed("duration") {
				f.runs = 0
			}
			return runBenchRuntimes(cmd.Context(), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.runtimes, "runtime", []string{runtimeNative, runtimeDocker, runtimeGVisor}, "comma-separated runtimes to measure: native, docker, gvisor")
	fl.StringVar(&f.image, "image", "datascience", "image every row runs, by name (crucible image ls); the docker rows run it imported into Docker")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	fl.IntVar(&f.runs, "runs", benchRuntimesDefaultRuns, "rounds measured: each row runs this many times")
	durationVar(fl, &f.duration, "duration", 0, "measure rounds until this much time has passed, instead of --runs")
	fl.BoolVar(&f.jsonOut, "json", false, "print the results as one JSON document instead of the table")
	return cmd
}

// check validates the flags.
func (f *benchRuntimesFlags) check() error {
	if len(f.runtimes) == 0 {
		return errors.New("--runtime: name at least one of native, docker, gvisor")
	}
	for i, n := range f.runtimes {
		if err := checkRuntimeName(n); err != nil {
			return err
		}
		if slices.Contains(f.runtimes[:i], n) {
			return fmt.Errorf("--runtime: %s named twice", n)
		}
	}
	switch {
	case f.runs < 0:
		return fmt.Errorf("--runs %d: must be positive", f.runs)
	case f.duration < 0:
		return fmt.Errorf("--duration %s: must be positive", f.duration)
	case f.runs == 0 && f.duration == 0:
		return errors.New("--runs or --duration must be positive")
	case f.image == "" || f.image == image.Host:
		return fmt.Errorf("--image %q: name a built image (crucible image ls): the docker rows need a root filesystem to import", f.image)
	}
	return nil
}

// runtimesBenchReport is the result of `crucible bench runtimes`, as
// --json prints it.
type runtimesBenchReport struct {
	Code        string `json:"code"`
	Image       string `json:"image"`
	ImageDigest string `json:"image_digest"`
	// Rounds is how many rounds were measured: each measured row ran
	// that many times.
	Rounds   int     `json:"rounds"`
	ElapsedS float64 `json:"elapsed_s"`
	CPUs     int     `json:"cpus"`
	// LoadAvg1 is the host's load average over a minute as the
	// measurement started.
	LoadAvg1 float64            `json:"load_avg_1m"`
	Rows     []runtimesBenchRow `json:"rows"`
	// Passed is set when every measured run printed 1.
	Passed bool `json:"passed"`
}

// Row states: measured, or why not.
const (
	rowMeasured    = "measured"
	rowUnavailable = "unavailable" // the host lacks what the row needs
	rowNotMeasured = "not_measured"
)

// runtimesBenchRow is one row: a runtime's path, or a baseline.
type runtimesBenchRow struct {
	// Runtime is native, docker or gvisor; "baseline" for bare and the
	// docker run rows.
	Runtime string `json:"runtime"`
	Path    string `json:"path"`
	// Detail says what the row runs: a baseline's command line, the pools
	// a pooled row takes from.
	Detail string `json:"detail"`
	State  string `json:"state"`
	// Reason says why a row is not measured.
	Reason       string        `json:"reason,omitempty"`
	Runs         int           `json:"runs"`
	Errors       int           `json:"errors"`
	ErrorSamples []errorSample `json:"error_samples"`
	// LatencyMS describes the runs that printed 1.
	LatencyMS latencyMS `json:"latency_ms"`
	// The row's median over the baselines' medians; absent when either is
	// not measured.
	XDockerRun      float64 `json:"x_docker_run,omitempty"`
	XDockerRunRunsc float64 `json:"x_docker_run_runsc,omitempty"`
	XBare           float64 `json:"x_bare,omitempty"`
}

func runBenchRuntimes(ctx context.Context, f *benchRuntimesFlags) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := benchRuntimes(ctx, f, os.Stderr)
	if rep == nil {
		return err
	}
	if f.jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printBenchRuntimes(os.Stdout, rep)
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "crucible: interrupted; the results cover the rounds completed")
		return exitCodeError(exitSignalOffset + int(syscall.SIGINT))
	case !rep.Passed:
		fmt.Fprintln(os.Stderr, "crucible: bench runtimes: runs failed (listed above)")
		return exitCodeError(exitInternal)
	}
	return nil
}

// benchRuntimes runs `crucible bench runtimes`, writing its progress to
// progress. When ctx ends it returns the rounds completed with ctx's
// error. Other errors are exit codes, already reported on stderr, with no
// report.
func benchRuntimes(ctx context.Context, f *benchRuntimesFlags, progress io.Writer) (*runtimesBenchReport, error) {
	if err := f.check(); err != nil {
		return nil, usageError(err)
	}
	img, err := image.Open(f.store, f.image)
	if err != nil {
		return nil, usageError(err)
	}
	e := &benchEnv{img: img, store: f.store, req: sandbox.Request{Language: sandbox.Python, Code: benchDefaultCode}, want: &benchDefaultStdout}
	specs := benchRuntimeRows(f.runtimes)
	rep := &runtimesBenchReport{Code: e.req.Code, Image: img.Name, ImageDigest: img.Digest, CPUs: runtime.NumCPU(), LoadAvg1: loadAvg1()}
	subjects := make([]*benchSubject, len(specs))
	defer func() {
		for _, s := range subjects {
			if s != nil {
				s.close()
			}
		}
	}()
	for i, spec := range specs {
		fmt.Fprintf(progress, "opening %s %s\n", spec.runtime, spec.path)
		row := runtimesBenchRow{Runtime: spec.runtime, Path: spec.path, State: rowMeasured, ErrorSamples: []errorSample{}}
		s, err := spec.open(ctx, e)
		if ctx.Err() != nil {
			if s != nil {
				s.close()
			}
			return rep, ctx.Err()
		}
		if reason, ok := isNotMeasured(err); ok {
			row.State, row.Reason = rowNotMeasured, reason
		} else if err != nil {
			if f.named && slices.Contains(f.runtimes, spec.runtime) {
				return nil, usageError(fmt.Errorf("--runtime %s: not available on this host: %v", spec.runtime, err))
			}
			row.State, row.Reason = rowUnavailable, oneLine(err.Error())
		} else {
			subjects[i], row.Detail = s, s.detail
		}
		rep.Rows = append(rep.Rows, row)
	}
	// Every call starts on a resting host: no pool is refilling behind
	// it, charging its work to the call measured.
	settleAll := func() {
		for _, s := range subjects {
			if s != nil && s.settle != nil {
				s.settle(ctx)
			}
		}
	}
	fmt.Fprintln(progress, "warm-up round")
	for _, s := range subjects {
		if s != nil {
			settleAll()
			s.call(ctx)
		}
	}
	lats := make([][]time.Duration, len(specs))
	tallies := make([]errorTally, len(specs))
	start := time.Now()
	more := func() bool {
		switch {
		case !slices.ContainsFunc(subjects, func(s *benchSubject) bool { return s != nil }):
			return false
		case f.runs > 0:
			return rep.Rounds < f.runs
		}
		return rep.Rounds == 0 || time.Since(start) < f.duration
	}
rounds:
	for more() {
		fmt.Fprintf(progress, "round %d\n", rep.Rounds+1)
		for i, s := range subjects {
			if s == nil {
				continue
			}
			settleAll()
			t := time.Now()
			o := s.call(ctx)
			lat := time.Since(t)
			if ctx.Err() != nil {
				break rounds
			}
			rep.Rows[i].Runs++
			if o.err != nil {
				tallies[i].add(oneLine(o.err.Error()))
				continue
			}
			lats[i] = append(lats[i], lat)
		}
		rep.Rounds++
	}
	rep.ElapsedS = time.Since(start).Seconds()
	rep.Passed = true
	for i := range rep.Rows {
		r := &rep.Rows[i]
		r.Errors, r.ErrorSamples = tallies[i].summary()
		r.LatencyMS = percentiles(lats[i])
		if r.Errors > 0 {
			rep.Passed = false
		}
	}
	setBaselineRatios(rep.Rows)
	return rep, ctx.Err()
}

// loadAvg1 returns the host's load average over the last minute, 0 if
// unknown: the table's context on a shared machine.
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscanf(string(b), "%f", &l)
	return l
}
