package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/swe"
)

// benchLine sums one task's outcome up on a line: its name, the verdict
// and why.
func benchLine(r swe.BenchResult) string {
	verdict := "resolved"
	if !r.Resolved {
		verdict = "NOT resolved (" + string(r.Status) + ")"
	}
	line := fmt.Sprintf("%-28s %s  %d steps, %s", r.Name, verdict, r.Steps, fmtMS(r.DurationMS))
	if r.Resolved {
		return line
	}
	var why []string
	switch {
	case r.ApplyError != "":
		why = append(why, "the diff did not apply: "+firstLineOf(r.ApplyError))
	case len(r.Broken) > 0:
		why = append(why, "broke "+listSome(r.Broken, 3))
	case len(r.Failing) > 0:
		why = append(why, "failing "+listSome(r.Failing, 3))
	}
	if len(r.TestEdits) > 0 {
		why = append(why, "edited the tests "+strings.Join(r.TestEdits, ", "))
	}
	if r.Reason != "" {
		why = append(why, firstLineOf(r.Reason))
	}
	if len(why) > 0 {
		line += "\n    " + strings.Join(why, "; ")
	}
	return line
}

// printBenchReport prints every task's line and the summary on stdout.
func printBenchReport(d *display, rep *swe.BenchReport) {
	for _, r := range rep.Results {
		fmt.Fprintln(d.stdout, benchLine(r))
	}
	statuses := make([]string, 0, len(rep.ByStatus))
	for s, n := range rep.ByStatus {
		statuses = append(statuses, fmt.Sprintf("%s %d", s, n))
	}
	sort.Strings(statuses)
	pct := 0.0
	if rep.Total > 0 {
		pct = 100 * float64(rep.Resolved) / float64(rep.Total)
	}
	fmt.Fprintf(d.stdout, "resolved %d/%d (%.1f%%) in %s, %d at once; %s\n", rep.Resolved, rep.Total, pct, fmtMS(rep.DurationMS), rep.Concurrency, strings.Join(statuses, ", "))
	d.stdout.flush()
}

// fmtMS shows milliseconds as a duration rounded to a tenth of a second.
func fmtMS(ms float64) string {
	return (time.Duration(ms * float64(time.Millisecond))).Round(100 * time.Millisecond).String()
}

// listSome joins the first n items and says how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// firstLineOf is s's first line.
func firstLineOf(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
