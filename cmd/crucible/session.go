package main

import (
	"bufio"
	"context"
	"errors"
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
"# %%" (the percent format of Jupytext and VS Code), or is one cell.

Commands: :ls lists the working directory, :upload LOCAL [NAME] copies a file
in, :download NAME [LOCAL] copies one out (to --out, or to a new file LOCAL),
:quit ends the session.

Figures left open by a cell and files it creates or changes are saved under
--out and their paths printed. Saved names are cleaned (one name in --out: no
"/", control characters, leading "." or "-"), and a file is never replaced
nor written through a symlink: a name taken gets -2, -3... before its
extension. On a terminal, escape sequences in the output are shown as
visible escapes (\x1b) unless --raw-output.

A cell that outlives --timeout is interrupted and the session kept; one that
ignores the interrupt ends the session.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runSession(cmd.Context(), &f, newDisplay(cmd)) },
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.files, "file", nil, "input file NAME=PATH placed in the working directory (repeatable)")
	durationVar(fl, &f.timeout, "timeout", 30*time.Second, "wall-time limit per cell")
	sizeVar(fl, &f.memory, "memory", 1<<30, "memory limit of the session")
	sizeVar(fl, &f.disk, "disk", 256<<20, "size of the working directory")
	fl.StringVar(&f.out, "out", "crucible-out", "directory for figures and files the cells produce")
	fl.StringVar(&f.rootfs, "rootfs", "", "root filesystem directory (default: the host's system directories)")
	fl.StringVar(&f.image, "image", "", "run in the built image `NAME` (list them with: crucible image ls)")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	addRawOutputFlag(fl)
	return cmd
}

func runSession(ctx context.Context, f *sessionFlags, d *display) error {
	files, err := readFileFlags(f.files)
	if err != nil {
		return usageError(err)
	}
	req := sandbox.SessionRequest{Language: sandbox.Python, Files: files}
	req.Limits = sandbox.Limits{WallTimeMS: f.timeout.Milliseconds(), CPUTimeMS: f.timeout.Milliseconds(), MemoryBytes: f.memory, DiskBytes: f.disk}
	if err := req.Validate(); err != nil {
		return usageError(err)
	}
	rt, err := startRuntime(f.rootfs, f.image, f.store, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	svc, err := localService(rt, errorHints(f.rootfs, f.image, f.store))
	if err != nil {
		return err
	}
	s, err := svc.OpenSession(ctx, server.DefaultTenant, req, service.SessionOptions{})
	if err != nil {
		return platformError(err)
	}
	defer s.Close()
	interactive := term.IsTerminal(int(os.Stdin.Fd()))
	if interactive {
		fmt.Fprintf(os.Stderr, "crucible session %s: Python in a sandbox; :quit or Ctrl-D ends it\n", s.ID())
	}
	cells := pipedCells(os.Stdin)
	if interactive {
		cells = typedCells(os.Stdin, os.Stderr)
	}
	r := &sessionREPL{s: s, out: f.out, d: d}
	for cell := range cells {
		if r.command(ctx, cell) {
			if r.quit {
				break
			}
			continue
		}
		cellCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		res, err := s.Exec(cellCtx, sandbox.Cell{Code: cell})
		stop()
		switch {
		case errors.Is(err, sandbox.ErrSessionClosed):
			d.status("crucible: the session has ended")
			return exitCodeError(exitCodeFor(r.last))
		case err != nil:
			d.status("crucible: %v", err)
			return exitCodeError(exitInternal)
		}
		r.show(res)
	}
	return nil
}

// sessionREPL prints results and runs the colon commands.
type sessionREPL struct {
	s    sandbox.Session
	out  string
	d    *display
	n    int
	quit bool
	last sandbox.Result
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
			fmt.Fprintln(os.Stderr, "usage: :upload LOCAL [NAME]")
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
			fmt.Fprintln(os.Stderr, "usage: :download NAME [LOCAL]")
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
		fmt.Fprintf(os.Stderr, "unknown command %s (:ls, :upload, :download, :quit)\n", fields[0])
	}
	return true
}

// report says how a colon command went.
func (r *sessionREPL) report(err error, ok string) {
	if err != nil {
		r.d.say("crucible: %v", err)
		return
	}
	r.d.say("%s", ok)
}

// show prints a cell's result and saves its artifacts.
func (r *sessionREPL) show(res sandbox.Result) {
	r.n++
	r.last = res
	d := r.d
	_, _ = d.stdout.Write(res.Stdout)
	_, _ = d.stderr.Write(res.Stderr)
	if res.Error != nil && res.Error.Traceback != "" {
		fmt.Fprintln(d.stderr, res.Error.Traceback)
	}
	showHint(d, res.Error)
	if res.Value != "" {
		fmt.Fprintf(d.stdout, "Out[%d]: %s\n", r.n, res.Value)
	}
	for _, a := range res.Artifacts {
		if a.ContentOmitted {
			d.say("artifact %s (%s) is over the artifact limit; not saved", a.Name, units.BytesSize(float64(a.Size)))
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

// typedCells reads cells typed at a terminal: a line is a cell, and a line
// ending in ":" opens a block that an empty line closes.
func typedCells(in io.Reader, prompt io.Writer) <-chan string {
	cells := make(chan string)
	go func() {
		defer close(cells)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var block []string
		fmt.Fprint(prompt, ">>> ")
		for sc.Scan() {
			line := sc.Text()
			switch {
			case len(block) > 0 && strings.TrimSpace(line) == "":
				cells <- strings.Join(block, "\n")
				block = nil
			case len(block) > 0 || strings.HasSuffix(strings.TrimSpace(line), ":"):
				block = append(block, line)
			case strings.TrimSpace(line) != "":
				cells <- line
			}
			if len(block) > 0 {
				fmt.Fprint(prompt, "... ")
			} else {
				fmt.Fprint(prompt, ">>> ")
			}
		}
		if len(block) > 0 {
			cells <- strings.Join(block, "\n")
		}
		fmt.Fprintln(prompt)
	}()
	return cells
}

// pipedCells splits piped input at lines starting with "# %%"; colon
// commands stand alone on their line.
func pipedCells(in io.Reader) <-chan string {
	cells := make(chan string)
	go func() {
		defer close(cells)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var cell []string
		flush := func() {
			if text := strings.TrimSpace(strings.Join(cell, "\n")); text != "" {
				cells <- strings.Join(cell, "\n")
			}
			cell = nil
		}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "# %%"):
				flush()
			case strings.HasPrefix(line, ":") && !strings.Contains(line, "="):
				flush()
				cells <- line
			default:
				cell = append(cell, line)
			}
		}
		flush()
	}()
	return cells
}
