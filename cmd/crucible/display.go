package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"golang.org/x/text/transform"
)

// styleOn and styleOff put the CLI's own status lines in bold on a
// terminal. Program and model output cannot forge a bold line: its escape
// sequences are shown as text (see inertText).
const styleOn, styleOff = "\x1b[1m", "\x1b[22m"

// rawOutputFlag names the flag that keeps program output as is on a
// terminal.
const rawOutputFlag = "raw-output"

// addRawOutputFlag adds --raw-output to a command that prints what a
// sandboxed program or a model wrote.
func addRawOutputFlag(fl *pflag.FlagSet) {
	fl.Bool(rawOutputFlag, false, "on a terminal, pass the program's output through as is, escape sequences included (default: shown as visible escapes such as \\x1b; output to a pipe or file is always exact)")
}

// display is where a command prints for a person: the output of sandboxed
// programs and models, on stdout and stderr, and its own lines on stderr.
//
// Security: on a terminal, what a program or a model wrote is made inert
// (inertText), unless --raw-output: it must not conceal, overwrite or
// imitate the CLI's summary, nor reach the terminal's clipboard or title.
// The CLI's own lines start on a line of their own and, on a terminal, are
// bold (unless NO_COLOR is set); their program-chosen parts (an error
// message, a file name) are inert even with --raw-output. Output to a pipe
// or a file stays byte-exact: it is data, not a screen.
type display struct {
	stdout, stderr *screen
	// styled is whether the CLI's own status lines are bold.
	styled bool
	// midLine is whether the last byte a terminal received was not a
	// newline.
	midLine bool
}

// screen is one of a display's output streams.
type screen struct {
	tty    bool
	direct io.Writer         // the stream, keeping midLine up to date
	inert  *transform.Writer // through inertText to direct; nil when raw
}

// newDisplay returns the display of os.Stdout and os.Stderr for cmd, which
// has the --raw-output flag.
func newDisplay(cmd *cobra.Command) *display {
	raw, _ := cmd.Flags().GetBool(rawOutputFlag)
	noColor := os.Getenv("NO_COLOR") != "" // no-color.org
	return newDisplayOn(os.Stdout, os.Stderr, isTerminal(os.Stdout), isTerminal(os.Stderr), raw, noColor)
}

// newDisplayOn returns a display writing to stdout and stderr, which are
// terminals as told.
func newDisplayOn(stdout, stderr io.Writer, stdoutTTY, stderrTTY, raw, noColor bool) *display {
	d := &display{styled: stderrTTY && !noColor}
	d.stdout = d.screen(stdout, stdoutTTY, raw)
	d.stderr = d.screen(stderr, stderrTTY, raw)
	return d
}

func (d *display) screen(w io.Writer, tty, raw bool) *screen {
	s := &screen{tty: tty, direct: w}
	if tty {
		s.direct = lineTracker{w, &d.midLine}
		if !raw {
			s.inert = transform.NewWriter(s.direct, inertText{})
		}
	}
	return s
}

// Write prints program or model output.
func (s *screen) Write(p []byte) (int, error) {
	if s.inert != nil {
		return s.inert.Write(p)
	}
	return s.direct.Write(p)
}

// flush ends a piece of output: it writes what inertText held back (a
// final \r, the start of a character) in its escaped form.
func (s *screen) flush() {
	if s.inert != nil {
		_ = s.inert.Close()
		s.inert = transform.NewWriter(s.direct, inertText{})
	}
}

// status prints one of the CLI's status lines, such as a run's summary.
func (d *display) status(format string, args ...any) {
	d.line(d.styled, format, args...)
}

// say prints one of the CLI's messages, such as where a file was saved.
func (d *display) say(format string, args ...any) {
	d.line(false, format, args...)
}

// line prints a line of the CLI's own on stderr, after the output so far,
// starting it on a line of its own on a terminal.
func (d *display) line(styled bool, format string, args ...any) {
	d.stdout.flush()
	d.stderr.flush()
	text := fmt.Sprintf(format, args...)
	if !d.stderr.tty {
		fmt.Fprintln(d.stderr.direct, text)
		return
	}
	text = inert(text)
	if styled {
		text = styleOn + text + styleOff
	}
	if d.midLine {
		text = "\n" + text
	}
	fmt.Fprintln(d.stderr.direct, text)
}

// lineTracker passes writes through, noting whether the last byte written
// was a newline.
type lineTracker struct {
	w       io.Writer
	midLine *bool
}

func (t lineTracker) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if n > 0 {
		*t.midLine = p[n-1] != '\n'
	}
	return n, err
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// errorLine prints a command's error on stderr, inert on a terminal: an
// error can quote a program's or a file's content.
func errorLine(err error) {
	text := err.Error()
	if isTerminal(os.Stderr) {
		text = inert(text)
	}
	fmt.Fprintln(os.Stderr, "crucible:", text)
}
