package main

import (
	"context"
	"encoding/json"
	"fmt"
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
)

// runFlags are the flags of `crucible run`.
type runFlags struct {
	lang     string
	code     string
	files    []string
	env      []string
	allow    []string
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
	out      string
	jsonOut  bool
	local    bool
	codeSeen bool
	policy   policyFlag
	// runtime is --runtime and --docker-image.
	runtime runtimeChoice
}

func newRunCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use: "run [flags] (-c CODE | FILE | -)",
		Example: `  crucible run -c 'print(sum(range(10)))'
  crucible run script.py
  echo 'console.log(6*7)' | crucible run --lang javascript -

  # Piped input is the program's standard input
  echo hi | crucible run -c 'import sys; print(sys.stdin.read().upper())'

  # A chart, saved in ./out (the summary lists out/chart.png)
  crucible run --image datascience --out out plot.py

  # Network to one host only (HTTP and HTTPS), every connection logged
  crucible run --allow pypi.org --allow files.pythonhosted.org fetch.py

  # The static code policy: nothing runs, the finding is printed, exit 120
  crucible run --policy block -c 'import socket'

  # Limits, an input file, and the full Result as JSON
  crucible run --timeout 2s --memory 128MiB --file data.csv=./data.csv --json analyse.py`,
		Short: "Run a program in a fresh sandbox",
		Long: `Run a program in a fresh native sandbox and report how it ended.

The program is -c CODE, a FILE, or - (read from standard input), at most
4 MiB. Its standard input is the file --stdin names; with --stdin -, or
without --stdin when standard input is not a terminal and does not hold the
program, it is this command's standard input (as python -c reads it). It is
read in full before the program starts, at most 64 MiB. In a loop that
reads its own input (while read ...), give --stdin /dev/null.

The program's stdout and stderr are shown as it writes them, each on its
own stream, followed by a one-line summary on stderr; an error the sandbox
explains (the network is off, a module is not in the image) ends it with a
hint. Python runs
unbuffered (PYTHONUNBUFFERED=1 unless --env sets it), so its prints show at
once. On a terminal, control characters and escape sequences in the output
are shown as visible escapes (\x1b) and the summary is bold on a line of its
own; --raw-output passes them through. Output to a pipe or a file is
byte-exact. With --json only the Result object is printed, when the run
ends (artifacts in it base64-encoded; --out saves them as well).

The program has no network unless --allow HOST[:PORT] (repeatable) names
a destination: it then reaches those, and nothing else, through a proxy
the host runs on the sandbox's own loopback (HTTP_PROXY, HTTPS_PROXY and
ALL_PROXY are set; Python's urllib and requests, curl and pip use them,
Node does not). HOST is a name, *.DOMAIN (the names under it), an
address, or a prefix such as 203.0.113.0/24; without a port, 80 and 443
are allowed. Loopback, private, link-local (the metadata address among
them) and multicast addresses are refused whatever is allowed: an --allow
that names only such addresses (or localhost) is refused as it is given,
as is a URL (give its host). The summary counts the connections and names
the refused ones with the reason; --json lists each (its "network"
member).

Files the program creates or changes in its working directory (artifacts,
such as a chart) are saved in --out DIR, created if missing; the summary
lists their paths. Saved names are cleaned (one name in DIR: no "/",
control characters, leading "." or "-"), and a file is never replaced nor
written through a symlink: a name taken gets -2, -3... before its
extension. Without --out nothing is saved and the summary says what was
left. Artifacts over the artifact limit (no content) or withheld are
named, never saved.

--policy checks the program before it runs against the strict preset
(blocked modules such as os, subprocess and socket, blocked builtins such
as eval and exec, and evasions such as getattr(x, "__..."), getattr with a
computed name, print.__self__ or tempfile._os): warn runs it
and prints each finding (rule, line, column, the line of code); block runs
nothing of a program with findings and ends "blocked". Python is checked
by the sandbox's own interpreter, JavaScript (require, import of
child_process, fs, net...) and bash (curl, wget, nc...) here. It is a
seatbelt, never the boundary: what a permitted library computes or runs
for the program passes it, and the sandbox holds whatever runs.

When a crucible serve of this user runs on this host with the root
filesystem, image and store asked for, the run is sent to it over its
local socket (` + defaultSocket + `, or $` + socketEnv + `) and takes
one of its ready sandboxes: faster, and the same output, exit code and
files. It is a local run all the same: not recorded, not redacted, the
same limits. Without such a server, or with --local, the command builds
its own sandbox.

Exit code: the program's own when it ran to its end; 124 timeout, 123 CPU
limit, 122 memory limit, 121 output limit, 120 blocked by --policy,
128+N killed by signal N, 2 invalid request, 70 platform failure or an
artifact --out could not save.`,
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
	fl.StringArrayVar(&f.allow, "allow", nil, "let the program reach `HOST[:PORT]` through the host's proxy: a name, *.DOMAIN, an address or a prefix; no port means 80 and 443 (repeatable; default: no network)")
	fl.StringVar(&f.stdin, "stdin", "", "`FILE` fed to the program's standard input, - for standard input (default: standard input when it is not a terminal and the program is not read from it)")
	durationVar(fl, &f.timeout, "timeout", sandbox.DefaultLimits().WallTime(), "wall-time limit")
	durationVar(fl, &f.cpuTime, "cpu-time", sandbox.DefaultLimits().CPUTime(), "CPU-time limit")
	sizeVar(fl, &f.memory, "memory", sandbox.DefaultLimits().MemoryBytes, "memory limit")
	fl.Int64Var(&f.pids, "pids", sandbox.DefaultLimits().Processes, "process and thread limit")
	sizeVar(fl, &f.output, "output", sandbox.DefaultLimits().OutputBytes, "stdout+stderr limit")
	sizeVar(fl, &f.disk, "disk", sandbox.DefaultLimits().DiskBytes, "size of the writable working directory")
	fl.StringVar(&f.rootfs, "rootfs", "", "root filesystem directory (default: the host's system directories, read-only)")
	fl.StringVar(&f.image, "image", "", "run in the built image `NAME` (list them with: crucible image ls)")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	fl.StringVar(&f.out, "out", "", "save the files the program creates in `DIR` (default: none saved; the summary names them)")
	fl.BoolVar(&f.jsonOut, "json", false, "print the Result as JSON and nothing else")
	f.runtime.addFlags(fl)
	fl.BoolVar(&f.local, "local", false, "build a sandbox here even when a local crucible serve could run the program (also: "+localEnv+"=1)")
	addPolicyFlag(fl, &f.policy, "static code policy `MODE`: off, warn (run, and print what it finds) or block (run nothing of code with findings); the strict preset, see above")
	addRawOutputFlag(fl)
	return cmd
}

func runCommand(ctx context.Context, f *runFlags, args []string, d *display) error {
	if err := f.runtime.check(); err != nil {
		return err
	}
	req, err := f.request(args)
	if err != nil {
		return usageError(err)
	}
	if err := req.Validate(); err != nil {
		return usageError(err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var live *liveOutput
	if !f.jsonOut {
		live = d.live()
		req.OnOutput = live.output
	}
	res, err := f.execute(ctx, req)
	if live != nil {
		live.close()
	}
	var reported exitCodeError
	if asExitCode(err, &reported) {
		return err
	}
	if sandbox.IsInputError(err) {
		return usageError(err)
	}
	if err != nil && res.Status == "" {
		res = sandbox.Result{Status: sandbox.StatusInternal, Reason: err.Error(), ExitCode: -1, Language: req.Language}
	}
	arts := saveArtifacts(res.Artifacts, f.out)
	code := exitCodeFor(res)
	if arts.err != nil {
		code = exitInternal
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
		if err := arts.failure(); err != nil {
			errorLine(fmt.Errorf("--out: %w", err))
		}
	} else {
		printFindings(d, res)
		d.status("%s%s", summary(res, err), arts.note())
	}
	return exitCodeError(code)
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
	for _, e := range f.allow {
		if _, err := sandbox.CheckAllowEntry(e); err != nil {
			return req, fmt.Errorf("--allow %q: %w", e, err)
		}
	}
	req.Network.Allow = f.allow
	if req.Stdin, err = programStdin(f.stdin, !f.codeSeen && len(args) > 0 && args[0] == stdinName); err != nil {
		return req, err
	}
	req.Policy = f.policy.policy()
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
	case args[0] == stdinName:
		b, err := readAtMost(os.Stdin, sandbox.MaxCodeBytes, "-", "a program")
		return string(b), "", err
	}
	file, err := os.Open(args[0])
	if err != nil {
		return "", "", err
	}
	defer file.Close()
	b, err := readAtMost(file, sandbox.MaxCodeBytes, args[0], "a program")
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
	if res.Network != nil {
		b.WriteString(" · " + networkSummary(res.Network))
	}
	if err != nil && res.Reason == "" {
		fmt.Fprintf(&b, " · %v", err)
	}
	return b.String()
}
