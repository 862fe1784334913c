//go:build linux

package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// The targets of issue 26: a pooled run of the docker runtime through the
// API costs at most this fraction of docker run, and one of gvisor of
// docker run runsc.
const benchPooledTarget = 0.25

// setBaselineRatios sets each measured row's ratios: its median over the
// medians of the baselines that were measured.
func setBaselineRatios(rows []runtimesBenchRow) {
	base := map[string]float64{}
	for _, r := range rows {
		if r.Runtime == runtimeBaseline && r.State == rowMeasured && r.LatencyMS.P50 > 0 {
			base[r.Path] = r.LatencyMS.P50
		}
	}
	ratio := func(p50 float64, path string) float64 {
		if b := base[path]; b > 0 && p50 > 0 {
			return p50 / b
		}
		return 0
	}
	for i := range rows {
		r := &rows[i]
		if r.State != rowMeasured {
			continue
		}
		r.XDockerRun = ratio(r.LatencyMS.P50, pathDockerRun)
		r.XDockerRunRunsc = ratio(r.LatencyMS.P50, pathDockerRunRunsc)
		r.XBare = ratio(r.LatencyMS.P50, pathBare)
	}
}

// benchTarget is one of issue 26's targets: a row's median over a
// baseline's.
type benchTarget struct {
	runtime, baseline string
}

// benchTargets are the pooled docker run through the API against docker
// run, and the pooled gvisor run through the API against docker run runsc.
var benchTargets = []benchTarget{{runtimeDocker, pathDockerRun}, {runtimeGVisor, pathDockerRunRunsc}}

// targetLines says, for each target whose rows were measured, the ratio of
// the pooled row through the API and whether it meets the target.
func targetLines(rows []runtimesBenchRow) []string {
	var lines []string
	for _, t := range benchTargets {
		for _, r := range rows {
			if r.Runtime != t.runtime || r.Path != pathPooledAPI || r.State != rowMeasured {
				continue
			}
			x := r.XDockerRun
			if t.baseline == pathDockerRunRunsc {
				x = r.XDockerRunRunsc
			}
			if x == 0 {
				continue
			}
			verdict := "meets"
			if x > benchPooledTarget {
				verdict = "misses"
			}
			lines = append(lines, fmt.Sprintf("%s %s / %s: %.3f× (target ≤ %.2f×: %s)", t.runtime, pathPooledAPI, t.baseline, x, benchPooledTarget, verdict))
		}
	}
	return lines
}

// printBenchRuntimes prints rep as a table, then what each row ran, the
// rows not measured and why, the targets, and the errors.
func printBenchRuntimes(w io.Writer, rep *runtimesBenchReport) {
	fmt.Fprintf(w, "crucible bench runtimes: python %q on %s (%s), %d rounds in %s; %d CPUs, load average %.2f at the start\n\n",
		rep.Code, rep.Image, rep.ImageDigest, rep.Rounds, time.Duration(rep.ElapsedS*float64(time.Second)).Round(time.Millisecond), rep.CPUs, rep.LoadAvg1)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "runtime\tpath\truns\terrors\tp50 ms\tp90 ms\tmax ms\t× docker run\t× docker run runsc\t× bare\t")
	ratio := func(x float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", x)
	}
	for _, r := range rep.Rows {
		if r.State != rowMeasured {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t\n", r.Runtime, r.Path)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t\n", r.Runtime, r.Path, r.Runs, r.Errors,
			r.LatencyMS.P50, r.LatencyMS.P90, r.LatencyMS.Max, ratio(r.XDockerRun), ratio(r.XDockerRunRunsc), ratio(r.XBare))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for _, r := range rep.Rows {
		switch r.State {
		case rowMeasured:
			fmt.Fprintf(w, "%s %s: %s\n", r.Runtime, r.Path, r.Detail)
		case rowUnavailable:
			fmt.Fprintf(w, "%s %s: unavailable: %s\n", r.Runtime, r.Path, r.Reason)
		default:
			fmt.Fprintf(w, "%s %s: not measured: %s\n", r.Runtime, r.Path, r.Reason)
		}
	}
	if lines := targetLines(rep.Rows); len(lines) > 0 {
		fmt.Fprintln(w)
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	for _, r := range rep.Rows {
		if r.Errors == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s %s, errors: %d\n", r.Runtime, r.Path, r.Errors)
		for _, s := range r.ErrorSamples {
			fmt.Fprintf(w, "  %d× %s\n", s.Count, s.Error)
		}
	}
}
