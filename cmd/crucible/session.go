package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	units "github.com/docker/go-units"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
)

// sessionFlags are the flags of `crucible session`.
type sessionFlags struct {
	files   []string
	timeout time.Duration
	memory  int64
	disk    int64
	out     string
	rootfs  string
	image   string
	store   string
	policy  policyFlag
	runtime runtimeChoice
}

func newSessionCommand() *cobra.Command {
	var f sessionFlags
	cmd := &cobra.Command{
		Use: "session",
		Example: `  # An interactive Python session in the data-science image
  crucible session --image datascience

  # Cells from a file, split at lines starting with "# %%"
  crucible session --file data.csv=./data.csv --out out < cells.py`,
		Short: "A sandboxed Python session: type or pipe cells, keep the variables",
		Long: `Start a live Python interpreter in a sandbox and run cells in it; variables,
imports and files persist from one cell to the next.

On a terminal, each line is a cell; a line ending in ":" opens a block that an
empty line closes. Piped input is split into cells at lines starting with
"# %%" (the percent format of Jupytext and VS Code), or is one cell. Cells run
one at a time, in order: lines typed while a cell runs wait for their turn.

A cell's output is shown while it runs, a line at a time, stdout on stdout
and stderr on stderr; then come its traceback, its value (Out[n]), the files
it saved, and a status line if it did not end normally. Ctrl-C interrupts
the running cell.

Commands: :ls lists the working directory, :upload LOCAL [NAME] copies a file
in, :download NAME [LOCAL] copies one out (to --out, or to a new file LOCAL),
:quit ends the session.

Figures left open by a cell and files it creates or changes are saved under
--out and their paths printed. Saved names are cleaned (one name in --out: no
"/", control characters, leading "." or "-"), and a file is never replaced
nor written through a symlink: a name taken gets -2, -3... before its
extension. On a terminal, escape sequences in the output are shown as
visible escapes (\x1b) unless --raw-output.

--policy checks every cell before it runs, as for crucible run: warn runs
it and prints the findings, block runs nothing of a cell with findings
(status blocked, exit code 120) and keeps the session.

The defaults (--timeout, --memory, --disk) are those of every session,
whichever way it is opened (this command, the HTTP API, MCP, the web UI's
notebook):SESSION_DEFAULTS.

A cell that outlives --timeout is interrupted and the session kept; one that
ignores the interrupt ends the session, as does an interpreter that exits or
is killed (os._exit): nothing runs after that cell. A cell that runs out of
memory ends with status memory_limit: the interpreter is restarted in the
same sandbox, every variable lost and the files kept, and the session goes on.

Exit code, piped input: 0 when every cell and command succeeded; else that of
the cell that ended the session, or else of the first that failed: 1 an
exception or a failed command, N the interpreter exited with N (os._exit),
124 timeout, 123 CPU limit, 122 memory limit, 121 output limit, 120 blocked
by --policy, 128+N killed by signal N, 2 an invalid cell or command (nothing ran). On a terminal, as in
Python's REPL, you see each error as it comes and they do not count: 0 when
you end the session (:quit, Ctrl-D), else the code of the cell that ended it.
Both: 2 invalid flags, 70 platform failure (or the session closed between
cells, as after 15 idle minutes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runSession(cmd.Context(), &f, newDisplay(cmd)) },
	}
	cmd.Long = strings.Replace(cmd.Long, "SESSION_DEFAULTS", describeSessionDefaults(), 1)
	fl := cmd.Flags()
	fl.StringArrayVar(&f.files, "file", nil, "input file NAME=PATH placed in the working directory (repeatable)")
	// The defaults are every transport's (sandbox.DefaultSessionLimits).
	def := sandbox.DefaultSessionLimits()
	durationVar(fl, &f.timeout, "timeout", def.WallTime(), "wall-time and CPU-time limit per cell")
	sizeVar(fl, &f.memory, "memory", def.MemoryBytes, "memory limit of the session")
	sizeVar(fl, &f.disk, "disk", def.DiskBytes, "size of the working directory")
	fl.StringVar(&f.out, "out", "crucible-out", "directory for figures and files the cells produce")
	fl.StringVar(&f.rootfs, "rootfs", "", "root filesystem directory (default: the host's system directories)")
	fl.StringVar(&f.image, "image", "", "run in the built image `NAME` (list them with: crucible image ls)")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	addPolicyFlag(fl, &f.policy, "static code policy `MODE` of every cell: off, warn or block (see above)")
	f.runtime.addFlags(fl)
	addRawOutputFlag(fl)
	return cmd
}

func runSession(ctx context.Context, f *sessionFlags, d *display) error {
	if err := f.runtime.check(); err != nil {
		return err
	}
	files, err := readFileFlags(f.files)
	if err != nil {
		return usageError(err)
	}
	req := sandbox.SessionRequest{Language: sandbox.Python, Files: files, Policy: f.policy.policy()}
	req.Limits = sandbox.Limits{WallTimeMS: f.timeout.Milliseconds(), CPUTimeMS: f.timeout.Milliseconds(), MemoryBytes: f.memory, DiskBytes: f.disk}
	if err := req.Validate(); err != nil {
		return usageError(err)
	}
	rt, err := f.runtime.start(ctx, f.rootfs, f.image, f.store, runtimeSettings{})
	if err != nil {
		return err
	}
	defer rt.close()
	svc, err := localService(rt)
	if err != nil {
		return err
	}
	s, err := svc.OpenSession(ctx, server.DefaultTenant, req, service.SessionOptions{})
	if err != nil {
		return platformError(err)
	}
	defer s.Close()
	r := &sessionREPL{s: s, out: f.out, d: d, interactive: term.IsTerminal(int(os.Stdin.Fd()))}
	// One reader of standard input, pulled a cell at a time: two would
	// race for the lines typed.
	var cells iter.Seq2[string, error]
	if r.interactive {
		fmt.Fprintf(os.Stderr, "crucible session %s: Python in a sandbox; :quit or Ctrl-D ends it\n", s.ID())
		cells = typedCells(os.Stdin, os.Stderr)
	} else {
		cells = pipedCells(os.Stdin)
	}
	return r.run(ctx, cells)
}

// sessionREPL runs the cells and colon commands, prints the results, and
// keeps what decides the exit code.
type sessionREPL struct {
	s           *service.Session
	out         string
	d           *display
	interactive bool
	n           int
	quit        bool
	last        sandbox.Result
	// failed is the exit code of the first cell or command that failed;
	// 0 while none has.
	failed int
}

// run runs cells until the input ends, :quit, or the session ends, and
// returns the exit code (see the command's help) as an exitCodeError.
func (r *sessionREPL) run(ctx context.Context, cells iter.Seq2[string, error]) error {
	for cell, err := range cells {
		if err != nil {
			r.d.status("crucible: %v", err)
			if errors.Is(err, bufio.ErrTooLong) {
				return exitCodeError(exitUsage)
			}
			return exitCodeError(exitInternal)
		}
		if r.command(ctx, cell) {
			if r.quit {
				break
			}
			continue
		}
		res, err := r.exec(ctx, cell)
		switch {
		case errors.Is(err, sandbox.ErrSessionClosed):
			r.d.status("crucible: the session has ended")
			if r.last.Signal != "" { // the last cell was killed, and the session with it
				return endedBy(r.last)
			}
			return exitCodeError(exitInternal) // it ended between cells
		case sandbox.IsInputError(err):
			r.d.status("crucible: %v", err)
			r.fail(exitUsage)
			continue
		case err != nil:
			r.d.status("crucible: %v", err)
			return exitCodeError(exitInternal)
		}
		r.show(res)
		select {
		case <-r.s.Done(): // the cell ended the session: nothing more can run
			return endedBy(res)
		default:
		}
	}
	if r.interactive || r.failed == 0 {
		return nil
	}
	return exitCodeError(r.failed)
}

// exec runs a cell, its output shown as it comes; Ctrl-C interrupts it.
func (r *sessionREPL) exec(ctx context.Context, code string) (sandbox.Result, error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The cell's output is shown as it comes, stdout and stderr apart,
	// and never waits on the terminal (see liveOutput).
	live := r.d.live()
	defer live.close()
	return r.s.Exec(ctx, sandbox.Cell{Code: code, OnOutput: live.output})
}

// fail notes a failed cell or command's exit code, if it is the first.
func (r *sessionREPL) fail(code int) {
	if r.failed == 0 {
		r.failed = code
	}
}

// endedBy is the exit code of a session that the cell whose result is res
// ended: the cell's, or exitInternal if the cell did not fail.
func endedBy(res sandbox.Result) error {
	if code := cellExitCode(res); code != 0 {
		return exitCodeError(code)
	}
	return exitCodeError(exitInternal)
}

// cellExitCode is a cell's exit code: 0 if it ran without error, else as
// `crucible run` reports a program that ended as the cell did, and 1 for
// a cell that failed with an exit status of 0 (an interpreter that called
// os._exit(0) ended the session).
func cellExitCode(res sandbox.Result) int {
	if res.Status == sandbox.StatusOK {
		return 0
	}
	if code := exitCodeFor(res); code != 0 {
		return code
	}
	return 1
}

// command runs a colon command; false means the text is a cell.
func (r *sessionREPL) command(ctx context.Context, text string) bool {
	fields := strings.Fields(text)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], ":") || strings.Contains(text, "\n") {
		return false
	}
	switch fields[0] {
	case ":quit", ":q", ":exit":
		r.quit = true
	case ":ls":
		files, err := r.s.ListFiles(ctx)
		if err != nil {
			r.d.say("crucible: %v", err)
			r.fail(1)
		}
		for _, fi := range files {
			if fi.Dir {
				fmt.Fprintf(r.d.stdout, "%10s  %s/\n", "", fi.Name)
			} else {
				fmt.Fprintf(r.d.stdout, "%10d  %s\n", fi.Size, fi.Name)
			}
		}
		r.d.stdout.flush()
	case ":upload":
		if len(fields) < 2 {
			r.usage("usage: :upload LOCAL [NAME]")
			break
		}
		name := filepath.Base(fields[1])
		if len(fields) > 2 {
			name = fields[2]
		}
		b, err := os.ReadFile(fields[1])
		if err == nil {
			err = r.s.WriteFile(ctx, name, b)
		}
		r.report(err, "uploaded "+name)
	case ":download":
		if len(fields) < 2 {
			r.usage("usage: :download NAME [LOCAL]")
			break
		}
		b, err := r.s.ReadFile(ctx, fields[1])
		local := ""
		switch {
		case err != nil:
		case len(fields) > 2:
			local = fields[2]
			err = createNew(local, b)
		default:
			local, err = saveNew(r.out, fields[1], b)
		}
		r.report(err, "saved "+local)
	default:
		r.usage(fmt.Sprintf("unknown command %s (:ls, :upload, :download, :quit)", fields[0]))
	}
	return true
}

// report says how a colon command went.
func (r *sessionREPL) report(err error, ok string) {
	if err != nil {
		r.d.say("crucible: %v", err)
		r.fail(1)
		return
	}
	r.d.say("%s", ok)
}

// usage says how a colon command given wrong is used; nothing ran.
func (r *sessionREPL) usage(text string) {
	r.d.say("%s", text)
	r.fail(exitUsage)
}

// show prints a cell's result and saves its artifacts.
func (r *sessionREPL) show(res sandbox.Result) {
	r.n++
	r.last = res
	if code := cellExitCode(res); code != 0 {
		r.fail(code)
	}
	d := r.d
	// The output was shown as it came (output).
	d.stdout.flush()
	d.stderr.flush()
	if res.Error != nil && res.Error.Traceback != "" {
		fmt.Fprintln(d.stderr, res.Error.Traceback)
	}
	showHint(d, res.Error)
	printFindings(d, res)
	for i, disp := range res.Displays {
		// A display shows as its text; a PNG is also saved, as a figure.
		fmt.Fprintf(d.stdout, "%s\n", disp.Text)
		if disp.MIME == "image/png" && len(disp.Data) > 0 {
			if dst, err := saveNew(r.out, fmt.Sprintf("cell%d-display-%d.png", r.n, i+1), disp.Data); err != nil {
				d.say("crucible: display %d: %v", i+1, err)
			} else {
				d.say("saved %s (%s)", dst, disp.MIME)
			}
		}
	}
	if res.Value != "" {
		fmt.Fprintf(d.stdout, "Out[%d]: %s\n", r.n, res.Value)
	}
	for _, a := range res.Artifacts {
		if why := unsavedReason(a); why != "" {
			d.say("artifact %s (%s) not saved: %s", a.Name, units.BytesSize(float64(a.Size)), why)
			continue
		}
		name := a.Name
		if strings.HasPrefix(name, "figure-") {
			name = fmt.Sprintf("cell%d-%s", r.n, name)
		}
		if dst, err := saveNew(r.out, name, a.Content); err != nil {
			d.say("crucible: artifact %s: %v", a.Name, err)
		} else {
			d.say("saved %s (%s)", dst, a.MIME)
		}
	}
	if res.Status != sandbox.StatusOK && res.Status != sandbox.StatusError || res.Reason != "" {
		d.status("crucible: %s · %s", res.Status, res.Reason)
	}
	d.stdout.flush()
	d.stderr.flush()
}
