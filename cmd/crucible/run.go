package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	units "github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
)

// runFlags are the flags of `crucible run`.
type runFlags struct {
	lang     string
	code     string
	files    []string
	env      []string
	stdin    string
	timeout  time.Duration
	cpuTime  time.Duration
	memory   int64
	pids     int64
	output   int64
	disk     int64
	rootfs   string
	image    string
	store    string
	jsonOut  bool
	codeSeen bool
}

func newRunCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use: "run [flags] (-c CODE | FILE | -)",
		Example: `  crucible run -c 'print(sum(range(10)))'
  crucible run script.py
  echo 'console.log(6*7)' | crucible run --lang javascript -

  # Limits, an input file, and the full Result as JSON
  crucible run --timeout 2s --memory 128MiB --file data.csv=./data.csv --json analyse.py`,
		Short: "Run a program in a fresh sandbox",
		Long: `Run a program in a fresh native sandbox and report how it ended.

The program's stdout and stderr are passed through, followed by a one-line
summary on stderr; an error the sandbox explains (the network is off, a
module is not in the image) ends it with a hint. On a terminal, control
characters and escape sequences in the output are shown as visible escapes
(\x1b) and the summary is bold on a line of its own; --raw-output passes
them through. Output to a pipe or a file is byte-exact. With --json only
the Result object is printed.

Exit code: the program's own when it ran to its end; 124 timeout, 123 CPU
limit, 122 memory limit, 121 output limit, 128+N killed by signal N,
2 invalid request, 70 platform failure.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.codeSeen = cmd.Flags().Changed("code")
			return runCommand(cmd.Context(), &f, args, newDisplay(cmd))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.lang, "lang", "", "language: python, javascript or bash (default: from the file extension, else python)")
	fl.StringVarP(&f.code, "code", "c", "", "program text")
	fl.StringArrayVar(&f.files, "file", nil, "input file NAME=PATH placed in the working directory (repeatable)")
	fl.StringArrayVar(&f.env, "env", nil, "environment variable NAME=VALUE for the program (repeatable)")
	fl.StringVar(&f.stdin, "stdin", "", "file fed to the program's standard input")
	durationVar(fl, &f.timeout, "timeout", sandbox.DefaultLimits.WallTime(), "wall-time limit")
	durationVar(fl, &f.cpuTime, "cpu-time", sandbox.DefaultLimits.CPUTime(), "CPU-time limit")
	sizeVar(fl, &f.memory, "memory", sandbox.DefaultLimits.MemoryBytes, "memory limit")
	fl.Int64Var(&f.pids, "pids", sandbox.DefaultLimits.Processes, "process and thread limit")
	sizeVar(fl, &f.output, "output", sandbox.DefaultLimits.OutputBytes, "stdout+stderr limit")
	sizeVar(fl, &f.disk, "disk", sandbox.DefaultLimits.DiskBytes, "size of the writable working directory")
	fl.StringVar(&f.rootfs, "rootfs", "", "root filesystem directory (default: the host's system directories, read-only)")
	fl.StringVar(&f.image, "image", "", "run in the built image `NAME` (list them with: crucible image ls)")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	fl.BoolVar(&f.jsonOut, "json", false, "print the Result as JSON and nothing else")
	addRawOutputFlag(fl)
	return cmd
}

func runCommand(ctx context.Context, f *runFlags, args []string, d *display) error {
	req, err := f.request(args)
	if err != nil {
		return usageError(err)
	}
	if err := req.Validate(); err != nil {
		return usageError(err)
	}
	rt, err := startRuntime(f.rootfs, f.image, f.store, nil)
	if err != nil {
		return err
	}
	svc, err := localService(rt, errorHints(f.rootfs, f.image, f.store))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	answer, err := svc.Run(ctx, server.DefaultTenant, req, service.RunOptions{})
	if sandbox.IsInputError(err) {
		return usageError(err)
	}
	res := answer.Result
	if err != nil && res.Status == "" {
		res = sandbox.Result{Status: sandbox.StatusInternal, Reason: err.Error(), ExitCode: -1, Language: req.Language}
	}
	if f.jsonOut {
		// On a terminal, inertText keeps the JSON valid and equal: it shows
		// C1 and bidirectional characters as JSON's own \u escapes.
		enc := json.NewEncoder(d.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // tracebacks say <module>, not \u003cmodule\u003e
		if encErr := enc.Encode(res); encErr != nil {
			return encErr
		}
		d.stdout.flush()
	} else {
		_, _ = d.stdout.Write(res.Stdout)
		_, _ = d.stderr.Write(res.Stderr)
		d.status("%s", summary(res, err))
	}
	return exitCodeError(exitCodeFor(res))
}

// usageError prints err and returns the usage exit code.
func usageError(err error) error {
	errorLine(err)
	return exitCodeError(exitUsage)
}

// platformError reports err, a failure of this host or of Crucible, and
// returns the platform-failure exit code.
func platformError(err error) error {
	errorLine(err)
	return exitCodeError(exitInternal)
}

// request builds the Request from the flags.
func (f *runFlags) request(args []string) (sandbox.Request, error) {
	var req sandbox.Request
	code, name, err := f.source(args)
	if err != nil {
		return req, err
	}
	req.Code = code
	if req.Language, err = f.language(name); err != nil {
		return req, err
	}
	if req.Files, err = readFileFlags(f.files); err != nil {
		return req, err
	}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return req, fmt.Errorf("--env %q: want NAME=VALUE", kv)
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = v
	}
	if f.stdin != "" {
		if req.Stdin, err = os.ReadFile(f.stdin); err != nil {
			return req, fmt.Errorf("--stdin: %w", err)
		}
	}
	req.Limits = sandbox.Limits{
		WallTimeMS:  f.timeout.Milliseconds(),
		CPUTimeMS:   f.cpuTime.Milliseconds(),
		Processes:   f.pids,
		MemoryBytes: f.memory,
		OutputBytes: f.output,
		DiskBytes:   f.disk,
	}
	return req, nil
}

// source returns the program text and the file name it came from.
func (f *runFlags) source(args []string) (string, string, error) {
	switch {
	case f.codeSeen && len(args) > 0:
		return "", "", fmt.Errorf("give the program either with -c or as FILE, not both")
	case f.codeSeen:
		return f.code, "", nil
	case len(args) == 0:
		return "", "", fmt.Errorf("no program: give -c CODE, a FILE, or - for standard input")
	case args[0] == "-":
		b, err := io.ReadAll(os.Stdin)
		return string(b), "", err
	}
	b, err := os.ReadFile(args[0])
	return string(b), args[0], err
}

// language resolves --lang, or guesses from the file extension.
func (f *runFlags) language(file string) (sandbox.Language, error) {
	if f.lang != "" {
		l, ok := sandbox.ParseLanguage(f.lang)
		if !ok {
			return "", fmt.Errorf("--lang %q: want python, javascript or bash", f.lang)
		}
		return l, nil
	}
	switch filepath.Ext(file) {
	case ".js", ".mjs", ".cjs":
		return sandbox.JavaScript, nil
	case ".sh", ".bash":
		return sandbox.Bash, nil
	}
	return sandbox.Python, nil
}

// summary is the one-line report printed after the program's output.
func summary(res sandbox.Result, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "crucible: %s", res.Status)
	if res.Status == sandbox.StatusOK || res.Status == sandbox.StatusError {
		fmt.Fprintf(&b, " (exit %d)", res.ExitCode)
	}
	fmt.Fprintf(&b, " · wall %.0f ms · cpu %.0f ms · peak %s", res.Metrics.WallMS, res.Metrics.CPUMS,
		units.BytesSize(float64(res.Metrics.PeakMemoryBytes)))
	if res.Error != nil {
		fmt.Fprintf(&b, " · %s: %s", res.Error.Type, res.Error.Message)
		if res.Error.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", res.Error.Line)
		}
		if res.Error.Hint != "" {
			fmt.Fprintf(&b, " · hint: %s", res.Error.Hint)
		}
	}
	if res.Reason != "" {
		fmt.Fprintf(&b, " · %s", res.Reason)
	}
	if err != nil && res.Reason == "" {
		fmt.Fprintf(&b, " · %v", err)
	}
	return b.String()
}
