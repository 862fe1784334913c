package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/crucible-sandbox/crucible/swe"
)

// ANSI colours of a diff's lines on a terminal.
const (
	colorAdded   = "\x1b[32m"
	colorRemoved = "\x1b[31m"
	colorHunk    = "\x1b[36m"
	colorReset   = "\x1b[0m"
)

// printSWEResult shows a swe run's outcome for a person on d's stdout:
// its status and reason, the tests before and after, and the change.
// Everything but the labels is the model's, a program's or the
// repository's, so it goes through d (inert on a terminal).
func printSWEResult(d *display, r *swe.Result) {
	w := d.stdout
	fmt.Fprintf(w, "status: %s", r.Status)
	if r.Reason != "" {
		fmt.Fprintf(w, " (%s)", r.Reason)
	}
	fmt.Fprintln(w)
	printTestReport(w, "tests before", r.Before)
	printTestReport(w, "tests after", r.After)
	for _, l := range []struct {
		label string
		ids   []string
	}{{"fail_to_pass", r.FailToPass}, {"pass_to_pass", r.PassToPass}, {"broken", r.Broken}, {"test edits", r.TestEdits}} {
		if len(l.ids) > 0 {
			fmt.Fprintf(w, "%s: %s\n", l.label, strings.Join(l.ids, ", "))
		}
	}
	if r.After != nil && len(r.After.Cases) > 0 {
		fmt.Fprintln(w, "\ntests after the change:")
		for _, c := range r.After.Cases {
			fmt.Fprintf(w, "  %-7s %s\n", c.Outcome, c.ID)
		}
	}
	if r.Diff == "" {
		fmt.Fprintln(w, "\nno change")
	} else {
		fmt.Fprintln(w, "\nchange:")
		w.flush()
		writeDiff(d, r.Diff)
	}
	b := r.Trace.Budget
	fmt.Fprintf(w, "\nsteps %d/%d · tokens %d · wall %.1f s · execution %.1f s · submitted %t · trace %s\n",
		b.Steps, b.MaxSteps, b.Tokens, b.WallMS/1000, b.ExecMS/1000, r.Submitted, r.ID)
	w.flush()
}

// printTestReport shows one run of the tests in a line, and why it did
// not run when the change did not apply.
func printTestReport(w io.Writer, label string, t *swe.TestReport) {
	if t == nil {
		return
	}
	fmt.Fprintf(w, "%s: %d passed, %d failed (%s, exit %d", label, t.Passed, t.Failed, t.Status, t.ExitCode)
	if t.Applied != "" {
		fmt.Fprintf(w, ", applied with %s", t.Applied)
	}
	fmt.Fprintln(w, ")")
	if t.ApplyError != "" {
		fmt.Fprintf(w, "  the change did not apply: %s\n", t.ApplyError)
	}
}

// writeDiff writes a unified diff on d's stdout: byte-exact off a
// terminal; on one, each line made inert and coloured by its kind (added,
// removed, hunk header), unless NO_COLOR.
//
// Security: the diff is the model's and the repository's text, so on a
// terminal its escape sequences must not act, and a line must not pose as
// another kind: the colour is chosen from the line's first byte and set
// around the inert text, never from within it.
func writeDiff(d *display, diff string) {
	s := d.stdout
	if !s.tty {
		_, _ = io.WriteString(s.direct, diff)
		return
	}
	color := os.Getenv("NO_COLOR") == ""
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		text := inert(strings.TrimSuffix(line, "\n"))
		if c := diffLineColor(line); color && c != "" {
			text = c + text + colorReset
		}
		_, _ = io.WriteString(s.direct, text+"\n")
	}
}

// diffLineColor is the colour of a diff's line, by its kind.
func diffLineColor(line string) string {
	switch {
	case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "diff --git "):
		return styleOn
	case strings.HasPrefix(line, "@@"):
		return colorHunk
	case strings.HasPrefix(line, "+"):
		return colorAdded
	case strings.HasPrefix(line, "-"):
		return colorRemoved
	}
	return ""
}
