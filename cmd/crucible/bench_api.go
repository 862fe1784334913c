//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
)

// benchDefaultCode is the program `crucible bench api` runs by default,
// and benchDefaultStdout what it prints.
const benchDefaultCode = "print(1)"

var benchDefaultStdout = "1\n"

// benchAPIFlags are the flags of `crucible bench api`.
type benchAPIFlags struct {
	duration      time.Duration
	levels        []int
	warm          int
	prestart      int
	image         string
	store         string
	code          string
	language      string
	db            string
	maxConcurrent int
	maxQueue      int
	jsonOut       bool
	// wantStdout, if set, is the stdout every run must print.
	wantStdout *string
}

// Bounds of the load `crucible bench api` generates.
const (
	// benchRequestTimeout fails a request, API or direct, that takes
	// longer: a hang must show as an error, not stall the benchmark.
	benchRequestTimeout = 2 * time.Minute
	// benchBackoff is a client's wait after a 429 without Retry-After;
	// benchMaxBackoff caps the wait a Retry-After asks for.
	benchBackoff    = 50 * time.Millisecond
	benchMaxBackoff = 250 * time.Millisecond
	// benchPoolWait bounds the wait for the sandbox pools to refill
	// before each phase.
	benchPoolWait = 30 * time.Second
	// benchErrorSamples is how many distinct errors a phase lists.
	benchErrorSamples = 5
)

func newBenchAPICommand() *cobra.Command {
	var f benchAPIFlags
	var wantStdout string
	cmd := &cobra.Command{
		Use: "api",
		Example: `  # Load the API and the runtime directly, 10 s per level, and print the ratio
  crucible bench api --duration 10s --concurrency 2,8,32

  crucible bench api --language python --code 'print(sum(range(10**6)))' --json

  # The data-science image, a pandas snippet, against the image's python3 run cold
  crucible bench api --image datascience --concurrency 2 \
    --code "import pandas as pd; print(pd.DataFrame({'a':[1,2]}).a.sum())" --want-stdout $'3\n'`,
		Short: "Measure the HTTP API's throughput and latency under load",
		Long: `Measure the HTTP API's throughput and latency under load, against the runtime
it serves as a baseline measured in the same run.

One runtime of --image (keeping --warm and --prestart sandboxes ready) and
one API server (run records in --db, by default a temporary SQLite file
removed afterwards) start in this process; the server listens on a loopback
port the kernel picks. Every request is POST /v1/runs?cache=0 from a client of
the Go SDK over a real HTTP connection, so that it really runs --code (which
must succeed, printing --want-stdout). The phases, each for --duration, the
sandbox pools refilled before each:

  back to back  one client sends each request when the previous answer
                arrives, nothing in between (b2b api); then, in a phase of
                its own, the bare interpreter runs --code the same way (b2b
                bare): the ratio of their median latencies is the API's
                cost of a run in multiples of bare.
  each level    for each --concurrency level, that many clients over the API
                (api); as many goroutines calling the same runtime directly
                (direct); as many bare interpreters at once (bare).

Bare is the language's interpreter (/usr/bin/python3 -c CODE for Python)
with an empty environment and no sandbox, run cold for each request,
chrooted into the image's root filesystem for an --image other than the
host's: what a caller without Crucible would run. The defaults take 5 minutes
30 seconds: 30s for each phase.

For each phase it reports the requests sent; ok,
answered 200 with status ok and the stdout wanted; 429s; errors: any other
HTTP status, transport failures and results whose status is not ok or whose
stdout is not --want-stdout, the first few distinct ones listed; throughput,
ok runs per second; and the latency of the ok requests (p50, p90, p99, max).
Then the back-to-back ratio (api p50 over bare p50), and for each level the
api/bare and api/direct throughput ratios and what the API adds to p50 and
p99 over direct.
Warnings and errors the server logs (a run record the store failed to write,
say) are counted and listed too.

A 429 is admission control working, not an error: before its next request,
the client waits as the Retry-After header says, at most ` + benchMaxBackoff.String() + `
(` + benchBackoff.String() + ` without one). The server executes --max-concurrent runs at once
and queues --max-queue more; the direct baseline has no admission, so all its
runs execute at once.

--json prints one JSON document instead of the table. Progress goes to stderr.

Exit code: 0 when no level had errors other than 429 (nor server log
warnings), 70 when one had, 2 for bad flags, 130 when interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch fl := cmd.Flags(); {
			case fl.Changed("want-stdout"):
				f.wantStdout = &wantStdout
			case !fl.Changed("code"):
				f.wantStdout = &benchDefaultStdout
			}
			return runBenchAPI(cmd.Context(), &f)
		},
	}
	fl := cmd.Flags()
	durationVar(fl, &f.duration, "duration", 30*time.Second, "how long each path (api, direct) is loaded at each level")
	fl.IntSliceVar(&f.levels, "concurrency", []int{2, 8, 32}, "comma-separated concurrency levels: clients sending requests at once")
	fl.IntVar(&f.warm, "warm", defaultWarm(), "Python zygote slots kept running, as crucible serve's --warm: one per CPU, at most 8")
	fl.IntVar(&f.prestart, "prestart", 2, "sandboxes kept built ahead of requests")
	fl.StringVar(&f.image, "image", "", "image the runs use, by name (crucible image ls); default: the host's root filesystem")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	fl.StringVar(&f.code, "code", benchDefaultCode, "program every request runs; it must succeed")
	fl.StringVar(&wantStdout, "want-stdout", "", `stdout every run must print, its newline included (--want-stdout $'1\n'); default: "1\n" for the default --code, unchecked for another`)
	fl.StringVar(&f.language, "language", "python", "language of --code: python, javascript or bash")
	fl.StringVar(&f.db, "db", "", "run store: SQLite file path or postgres:// URL (default: a temporary SQLite file, removed afterwards)")
	fl.IntVar(&f.maxConcurrent, "max-concurrent", 0, "runs the server executes at once (default: twice the number of CPUs)")
	fl.IntVar(&f.maxQueue, "max-queue", 0, fmt.Sprintf("runs the server queues beyond those; more get 429 (default %d)", service.DefaultMaxQueue))
	fl.BoolVar(&f.jsonOut, "json", false, "print the results as one JSON document instead of the table")
	return cmd
}

// apiBenchReport is the result of `crucible bench api`, as --json prints it.
type apiBenchReport struct {
	Language sandbox.Language `json:"language"`
	Code     string           `json:"code"`
	// Image is the image the runs use, "" for the host's root filesystem;
	// BareRoot the directory the bare interpreter is chrooted into, "" for
	// none.
	Image         string  `json:"image"`
	BareRoot      string  `json:"bare_root"`
	DurationS     float64 `json:"duration_s"`
	Warm          int     `json:"warm"`
	Prestart      int     `json:"prestart"`
	MaxConcurrent int     `json:"max_concurrent"`
	MaxQueue      int     `json:"max_queue"`
	CPUs          int     `json:"cpus"`
	// BackToBack is the back-to-back phase pair; nil if interrupted
	// before it ended.
	BackToBack *benchB2B    `json:"back_to_back"`
	Levels     []benchLevel `json:"levels"`
	// Passed is set when no level had errors other than 429, nor server
	// log warnings.
	Passed bool `json:"passed"`
}

// benchB2B is one client sending requests back to back over the API, and
// the bare interpreter run back to back in a phase of its own.
type benchB2B struct {
	API  benchPhase `json:"api"`
	Bare benchPhase `json:"bare"`
	// BareRatio is the API's median latency over bare's.
	BareRatio float64 `json:"x_bare"`
	// ServerLogErrors counts the warnings and errors the server logged
	// during the API phase; ServerLogSamples lists the first few.
	ServerLogErrors  int           `json:"server_log_errors"`
	ServerLogSamples []errorSample `json:"server_log_samples"`
}

// benchLevel is one concurrency level: the API, the runtime directly, the
// bare interpreter, and how they compare.
type benchLevel struct {
	Concurrency int        `json:"concurrency"`
	API         benchPhase `json:"api"`
	Direct      benchPhase `json:"direct"`
	Bare        benchPhase `json:"bare"`
	// ThroughputRatio is API throughput over direct throughput.
	ThroughputRatio float64 `json:"throughput_ratio"`
	// BareThroughputRatio is API throughput over bare throughput.
	BareThroughputRatio float64 `json:"x_bare"`
	// AddedP50MS and AddedP99MS are the API's latency percentiles minus
	// the direct ones.
	AddedP50MS float64 `json:"added_p50_ms"`
	AddedP99MS float64 `json:"added_p99_ms"`
	// ServerLogErrors counts the warnings and errors the server logged
	// during the API phase; ServerLogSamples lists the first few distinct
	// ones.
	ServerLogErrors  int           `json:"server_log_errors"`
	ServerLogSamples []errorSample `json:"server_log_samples"`
}

// benchPhase is one path loaded at one level.
type benchPhase struct {
	Requests int `json:"requests"`
	OK       int `json:"ok"`
	Rejected int `json:"rejected_429"`
	// Errors counts the requests that failed otherwise; ErrorSamples lists
	// the first few distinct errors.
	Errors        int           `json:"errors"`
	ErrorSamples  []errorSample `json:"error_samples"`
	ElapsedS      float64       `json:"elapsed_s"`
	ThroughputRPS float64       `json:"throughput_rps"`
	// LatencyMS describes the ok requests only.
	LatencyMS latencyMS `json:"latency_ms"`
}

// latencyMS are latency percentiles (nearest rank) in milliseconds.
type latencyMS struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// errorSample is one distinct error and how often it happened.
type errorSample struct {
	Error string `json:"error"`
	Count int    `json:"count"`
}

func runBenchAPI(ctx context.Context, f *benchAPIFlags) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := benchAPI(ctx, f, os.Stderr)
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
		printBenchAPI(os.Stdout, rep)
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "crucible: interrupted; the results cover the levels completed")
		return exitCodeError(exitSignalOffset + int(syscall.SIGINT))
	case !rep.Passed:
		fmt.Fprintln(os.Stderr, "crucible: bench api: errors other than 429 under load (listed above)")
		return exitCodeError(exitInternal)
	}
	return nil
}

// benchAPI runs `crucible bench api`, writing its progress to progress.
// When ctx ends it returns the levels completed with ctx's error. Other
// errors are exit codes, already reported on stderr, with no report.
func benchAPI(ctx context.Context, f *benchAPIFlags, progress io.Writer) (*apiBenchReport, error) {
	req, err := f.check()
	if err != nil {
		return nil, usageError(err)
	}
	var bareRoot string
	rt, err := startRuntime("", f.image, f.store, func(o *linux.Options) {
		o.Warm, o.Prestart = f.warm, f.prestart
		bareRoot = o.RootFS
	})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	srv, err := startBenchServer(ctx, rt, benchServerConfig{db: f.db, maxConcurrent: f.maxConcurrent, maxQueue: f.maxQueue, clients: slices.Max(f.levels)})
	if err != nil {
		return nil, platformError(err)
	}
	defer srv.close()
	c, logs := srv.client, srv.logs

	rep := &apiBenchReport{
		Language: req.Language, Code: req.Code, Image: f.image, BareRoot: bareRoot, DurationS: f.duration.Seconds(),
		Warm: f.warm, Prestart: f.prestart, MaxConcurrent: f.maxConcurrent, MaxQueue: f.maxQueue,
		CPUs: runtime.NumCPU(), Levels: []benchLevel{}, Passed: true,
	}
	if rep.MaxConcurrent == 0 {
		rep.MaxConcurrent = service.DefaultConcurrencyPerCPU * runtime.NumCPU()
	}
	if rep.MaxQueue == 0 {
		rep.MaxQueue = service.DefaultMaxQueue
	}
	api, direct, bare := apiCall(c, req, f.wantStdout), directCall(rt, req, f.wantStdout), bareCall(bareRoot, req, f.wantStdout)
	// Back to back first: one client, each request when the previous
	// answer arrived; bare in its own phase, once the pools are full
	// again, so that neither pays for the other's work.
	fmt.Fprintf(progress, "back to back: API for %s\n", f.duration)
	waitForPools(ctx, rt)
	b2b := &benchB2B{API: drive(ctx, 1, f.duration, api)}
	b2b.ServerLogErrors, b2b.ServerLogSamples = logs.take().summary()
	fmt.Fprintf(progress, "back to back: bare for %s\n", f.duration)
	waitForPools(ctx, rt)
	b2b.Bare = drive(ctx, 1, f.duration, bare)
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	if b2b.Bare.LatencyMS.P50 > 0 {
		b2b.BareRatio = b2b.API.LatencyMS.P50 / b2b.Bare.LatencyMS.P50
	}
	if b2b.API.Errors > 0 || b2b.Bare.Errors > 0 || b2b.ServerLogErrors > 0 {
		rep.Passed = false
	}
	rep.BackToBack = b2b
	for _, n := range f.levels {
		lv := benchLevel{Concurrency: n}
		fmt.Fprintf(progress, "concurrency %d: API for %s\n", n, f.duration)
		waitForPools(ctx, rt)
		lv.API = drive(ctx, n, f.duration, api)
		lv.ServerLogErrors, lv.ServerLogSamples = logs.take().summary()
		fmt.Fprintf(progress, "concurrency %d: direct for %s\n", n, f.duration)
		waitForPools(ctx, rt)
		lv.Direct = drive(ctx, n, f.duration, direct)
		fmt.Fprintf(progress, "concurrency %d: bare for %s\n", n, f.duration)
		waitForPools(ctx, rt)
		lv.Bare = drive(ctx, n, f.duration, bare)
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		if lv.Direct.ThroughputRPS > 0 {
			lv.ThroughputRatio = lv.API.ThroughputRPS / lv.Direct.ThroughputRPS
		}
		if lv.Bare.ThroughputRPS > 0 {
			lv.BareThroughputRatio = lv.API.ThroughputRPS / lv.Bare.ThroughputRPS
		}
		lv.AddedP50MS = lv.API.LatencyMS.P50 - lv.Direct.LatencyMS.P50
		lv.AddedP99MS = lv.API.LatencyMS.P99 - lv.Direct.LatencyMS.P99
		if lv.API.Errors > 0 || lv.Direct.Errors > 0 || lv.Bare.Errors > 0 || lv.ServerLogErrors > 0 {
			rep.Passed = false
		}
		rep.Levels = append(rep.Levels, lv)
	}
	return rep, nil
}

// check validates the flags and returns the request every run sends.
func (f *benchAPIFlags) check() (sandbox.Request, error) {
	if f.duration <= 0 {
		return sandbox.Request{}, fmt.Errorf("--duration %s: must be positive", f.duration)
	}
	if len(f.levels) == 0 || slices.Min(f.levels) < 1 {
		return sandbox.Request{}, fmt.Errorf("--concurrency %v: want comma-separated positive integers such as 2,8,32", f.levels)
	}
	if f.warm < 0 || f.prestart < 0 || f.maxConcurrent < 0 || f.maxQueue < 0 {
		return sandbox.Request{}, errors.New("--warm, --prestart, --max-concurrent and --max-queue must not be negative")
	}
	l, ok := sandbox.ParseLanguage(f.language)
	if !ok {
		return sandbox.Request{}, fmt.Errorf("--language %q: want python, javascript or bash", f.language)
	}
	req := sandbox.Request{Language: l, Code: f.code}
	return req, req.Validate()
}

// outcome is how one request ended: ok, refused with 429, or failed.
type outcome struct {
	err        error
	rejected   bool
	retryAfter time.Duration // what a 429's Retry-After asked for
}

// bypassCache is ?cache=0, said on the wire although it is the server's
// default: every request the benchmarks send runs its code.
func bypassCache(q url.Values) { q.Set("cache", "0") }

// apiCall returns a call that runs req through the API (POST
// /v1/runs?cache=0); the run must print want, if set.
func apiCall(c *client.Client, req sandbox.Request, want *string) func(context.Context) outcome {
	return func(ctx context.Context) outcome {
		ctx, cancel := context.WithTimeout(ctx, benchRequestTimeout)
		defer cancel()
		res, err := c.CreateRun(ctx, req, bypassCache)
		var apiErr *client.APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests:
			return outcome{rejected: true, retryAfter: apiErr.RetryAfter}
		case err != nil:
			return outcome{err: err}
		case res.CacheHit:
			return outcome{err: errors.New("cache hit despite ?cache=0")}
		}
		return resultOutcome(res.Result, want)
	}
}

// directCall returns a call that runs req on rt directly; the run must
// print want, if set.
func directCall(rt sandbox.Runtime, req sandbox.Request, want *string) func(context.Context) outcome {
	return func(ctx context.Context) outcome {
		ctx, cancel := context.WithTimeout(ctx, benchRequestTimeout)
		defer cancel()
		res, err := rt.Run(ctx, req)
		if err != nil {
			return outcome{err: err}
		}
		return resultOutcome(res, want)
	}
}

// resultOutcome fails a run whose status is not ok, or whose stdout is
// not want, if set.
func resultOutcome(res sandbox.Result, want *string) outcome {
	if res.Status == sandbox.StatusOK {
		if want != nil && string(res.Stdout) != *want {
			out := res.Stdout
			if len(out) > 80 {
				out = out[:80]
			}
			return outcome{err: fmt.Errorf("run printed %q, want %q", out, *want)}
		}
		return outcome{}
	}
	msg := fmt.Sprintf("run ended %s, exit code %d", res.Status, res.ExitCode)
	if res.Reason != "" {
		msg += ": " + res.Reason
	}
	return outcome{err: errors.New(msg)}
}

// waitForPools waits, at most benchPoolWait, until rt's pools are full, so
// that every phase starts with the sandboxes a resting server has.
func waitForPools(ctx context.Context, rt *linux.Runtime) {
	deadline := time.Now().Add(benchPoolWait)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		p, w := rt.PoolStats(), rt.WarmStats()
		if p.Ready >= p.Size && w.Ready >= w.Size {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// drive makes n workers send requests with call back to back for d, and
// measures them. A worker whose request was refused waits as the refusal
// asked, within bounds. Requests still going at d finish and count.
func drive(ctx context.Context, n int, d time.Duration, call func(context.Context) outcome) benchPhase {
	var (
		mu    sync.Mutex
		p     benchPhase
		lats  []time.Duration
		errs  errorTally
		wg    sync.WaitGroup
		start = time.Now()
	)
	deadline := start.Add(d)
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t := time.Now()
				o := call(ctx)
				lat := time.Since(t)
				mu.Lock()
				p.Requests++
				switch {
				case o.rejected:
					p.Rejected++
				case o.err != nil:
					errs.add(o.err.Error())
				default:
					p.OK++
					lats = append(lats, lat)
				}
				mu.Unlock()
				if o.rejected {
					backoff(ctx, o.retryAfter, deadline)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	p.Errors, p.ErrorSamples = errs.summary()
	p.ElapsedS = elapsed.Seconds()
	p.ThroughputRPS = float64(p.OK) / elapsed.Seconds()
	p.LatencyMS = percentiles(lats)
	return p
}

// backoff waits after a 429: as long as its Retry-After asked, within
// benchMaxBackoff, or benchBackoff when it did not say; never past
// deadline.
func backoff(ctx context.Context, retryAfter time.Duration, deadline time.Time) {
	wait := retryAfter
	if wait <= 0 {
		wait = benchBackoff
	}
	wait = min(wait, benchMaxBackoff, time.Until(deadline))
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// percentiles returns the nearest-rank percentiles of ds, which it sorts.
func percentiles(ds []time.Duration) latencyMS {
	if len(ds) == 0 {
		return latencyMS{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		return millis(ds[max(int(math.Ceil(q*float64(len(ds))))-1, 0)])
	}
	return latencyMS{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: millis(ds[len(ds)-1])}
}

// millis returns d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// errorTally counts errors and keeps the first few distinct ones. It is
// safe for concurrent use.
type errorTally struct {
	mu      sync.Mutex
	count   int
	samples []errorSample
}

func (t *errorTally) add(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count++
	for i := range t.samples {
		if t.samples[i].Error == msg {
			t.samples[i].Count++
			return
		}
	}
	if len(t.samples) < benchErrorSamples {
		t.samples = append(t.samples, errorSample{Error: msg, Count: 1})
	}
}

// summary returns the count and the samples, never nil.
func (t *errorTally) summary() (int, []errorSample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count, append([]errorSample{}, t.samples...)
}

// serverLog collects the warnings and errors the server logs: each is one
// Write of its text handler.
type serverLog struct {
	mu  sync.Mutex
	cur *errorTally
}

func newServerLog() *serverLog { return &serverLog{cur: &errorTally{}} }

// logger returns a logger of warnings and errors into l, without the time
// and the run or session ID, so that repeats of an error look alike.
func (l *serverLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == "run" || a.Key == "session") {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func (l *serverLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	t := l.cur
	l.mu.Unlock()
	t.add(strings.TrimSpace(string(b)))
	return len(b), nil
}

// take returns what was logged since the last take.
func (l *serverLog) take() *errorTally {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.cur
	l.cur = &errorTally{}
	return t
}

// printBenchAPI prints rep as a table, then the comparisons and the errors.
func printBenchAPI(w io.Writer, rep *apiBenchReport) {
	img := rep.Image
	if img == "" {
		img = "the host's root filesystem"
	}
	bareRoot := "the host's"
	if rep.BareRoot != "" {
		bareRoot = "chrooted into " + rep.BareRoot
	}
	fmt.Fprintf(w, "crucible bench api: %s %q on %s, %s per phase; warm %d, prestart %d; server max-concurrent %d, max-queue %d; %d CPUs; bare: %s interpreter\n\n",
		rep.Language, rep.Code, img, time.Duration(rep.DurationS*float64(time.Second)), rep.Warm, rep.Prestart, rep.MaxConcurrent, rep.MaxQueue, rep.CPUs, bareRoot)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "concurrency\tpath\trequests\tok\t429\terrors\truns/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	row := func(n, path string, p benchPhase) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", n, path, p.Requests, p.OK, p.Rejected,
			p.Errors, p.ThroughputRPS, p.LatencyMS.P50, p.LatencyMS.P90, p.LatencyMS.P99, p.LatencyMS.Max)
	}
	if b := rep.BackToBack; b != nil {
		row("1 b2b", "api", b.API)
		row("1 b2b", "bare", b.Bare)
	}
	for _, lv := range rep.Levels {
		n := strconv.Itoa(lv.Concurrency)
		row(n, "api", lv.API)
		row(n, "direct", lv.Direct)
		row(n, "bare", lv.Bare)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	if b := rep.BackToBack; b != nil {
		fmt.Fprintf(w, "back to back: api p50 %.2f ms / bare p50 %.2f ms = %.3f× bare\n", b.API.LatencyMS.P50, b.Bare.LatencyMS.P50, b.BareRatio)
	}
	for _, lv := range rep.Levels {
		fmt.Fprintf(w, "concurrency %d: api/bare throughput %.3f×; api/direct throughput %.3f; the API adds %+.2f ms at p50, %+.2f ms at p99\n",
			lv.Concurrency, lv.BareThroughputRatio, lv.ThroughputRatio, lv.AddedP50MS, lv.AddedP99MS)
	}
	list := func(n string, what string, count int, samples []errorSample) {
		if count == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s, %s: %d\n", n, what, count)
		for _, s := range samples {
			fmt.Fprintf(w, "  %d× %s\n", s.Count, s.Error)
		}
	}
	if b := rep.BackToBack; b != nil {
		list("back to back", "API errors", b.API.Errors, b.API.ErrorSamples)
		list("back to back", "bare errors", b.Bare.Errors, b.Bare.ErrorSamples)
		list("back to back", "server log warnings and errors", b.ServerLogErrors, b.ServerLogSamples)
	}
	for _, lv := range rep.Levels {
		n := fmt.Sprintf("concurrency %d", lv.Concurrency)
		list(n, "API errors", lv.API.Errors, lv.API.ErrorSamples)
		list(n, "direct errors", lv.Direct.Errors, lv.Direct.ErrorSamples)
		list(n, "bare errors", lv.Bare.Errors, lv.Bare.ErrorSamples)
		list(n, "server log warnings and errors", lv.ServerLogErrors, lv.ServerLogSamples)
	}
}
