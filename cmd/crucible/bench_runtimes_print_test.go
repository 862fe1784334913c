package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// measured is a measured row of the given median.
func measured(rt, path string, p50 float64) runtimesBenchRow {
	return runtimesBenchRow{Runtime: rt, Path: path, State: rowMeasured, Runs: 3, LatencyMS: latencyMS{P50: p50, P90: p50 * 2, Max: p50 * 3}}
}

func TestSetBaselineRatios(t *testing.T) {
	type ratios struct{ dockerRun, runsc, bare float64 }
	cases := []struct {
		name string
		rows []runtimesBenchRow
		want []ratios
	}{{
		name: "every baseline",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathBare, 20), measured(runtimeBaseline, pathDockerRun, 400),
			measured(runtimeBaseline, pathDockerRunRunsc, 500), measured(runtimeNative, pathPooled, 5), measured(runtimeGVisor, pathCold, 1000)},
		want: []ratios{{0.05, 0.04, 1}, {1, 0.8, 20}, {1.25, 1, 25}, {0.0125, 0.01, 0.25}, {2.5, 2, 50}},
	}, {
		name: "docker run unavailable: no ratio to it",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathBare, 20),
			{Runtime: runtimeBaseline, Path: pathDockerRun, State: rowUnavailable, Reason: "no daemon"}, measured(runtimeNative, pathCold, 80)},
		want: []ratios{{0, 0, 1}, {0, 0, 0}, {0, 0, 4}},
	}, {
		name: "a row not measured and one whose every run failed get none",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathBare, 20), measured(runtimeBaseline, pathDockerRun, 400),
			{Runtime: runtimeDocker, Path: pathPooled, State: rowNotMeasured, LatencyMS: latencyMS{P50: 10}}, measured(runtimeDocker, pathCold, 0)},
		want: []ratios{{0.05, 0, 1}, {1, 0, 20}, {0, 0, 0}, {0, 0, 0}},
	}, {
		name: "a baseline whose every run failed is no baseline",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathBare, 0), measured(runtimeNative, pathCold, 80)},
		want: []ratios{{0, 0, 0}, {0, 0, 0}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setBaselineRatios(c.rows)
			for i, r := range c.rows {
				got := ratios{r.XDockerRun, r.XDockerRunRunsc, r.XBare}
				if got != c.want[i] {
					t.Errorf("%s %s: ratios %+v, want %+v", r.Runtime, r.Path, got, c.want[i])
				}
			}
		})
	}
}

func TestTargetLines(t *testing.T) {
	cases := []struct {
		name string
		rows []runtimesBenchRow
		want []string
	}{{
		name: "both pooled API rows, one meeting its target and one missing it",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathDockerRun, 400), measured(runtimeBaseline, pathDockerRunRunsc, 500),
			measured(runtimeDocker, pathPooledAPI, 100), measured(runtimeGVisor, pathPooledAPI, 200), measured(runtimeDocker, pathCold, 500)},
		want: []string{"docker pooled API / docker run: 0.250× (target ≤ 0.25×: meets)", "gvisor pooled API / docker run runsc: 0.400× (target ≤ 0.25×: misses)"},
	}, {
		name: "the target is the API row's, not the direct pooled row's",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathDockerRun, 400), measured(runtimeBaseline, pathDockerRunRunsc, 500),
			measured(runtimeDocker, pathPooled, 40), measured(runtimeDocker, pathPooledAPI, 120),
			measured(runtimeGVisor, pathPooled, 200), measured(runtimeGVisor, pathPooledAPI, 100)},
		want: []string{"docker pooled API / docker run: 0.300× (target ≤ 0.25×: misses)", "gvisor pooled API / docker run runsc: 0.200× (target ≤ 0.25×: meets)"},
	}, {
		name: "only the direct pooled rows measured: no line",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathDockerRun, 400), measured(runtimeBaseline, pathDockerRunRunsc, 500),
			measured(runtimeDocker, pathPooled, 40), {Runtime: runtimeDocker, Path: pathPooledAPI, State: rowUnavailable, Reason: "no server"},
			measured(runtimeGVisor, pathPooled, 50)},
	}, {
		name: "native pooled API has no target",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathDockerRun, 400), measured(runtimeNative, pathPooledAPI, 10)},
	}, {
		name: "pooled API rows not measured: no line",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathDockerRun, 400), {Runtime: runtimeDocker, Path: pathPooledAPI, State: rowNotMeasured}},
	}, {
		name: "baseline missing: no line",
		rows: []runtimesBenchRow{measured(runtimeBaseline, pathDockerRun, 400), measured(runtimeGVisor, pathPooledAPI, 50)},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setBaselineRatios(c.rows)
			got := targetLines(c.rows)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("target lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestPrintBenchRuntimes(t *testing.T) {
	bad := measured(runtimeDocker, pathCold, 500)
	bad.Errors, bad.ErrorSamples = 2, []errorSample{{Error: `run printed "2\n", want "1\n"`, Count: 2}}
	rep := &runtimesBenchReport{Code: "print(1)", Image: "datascience", ImageDigest: "sha256:ab", Rounds: 3, ElapsedS: 9, CPUs: 2,
		Rows: []runtimesBenchRow{measured(runtimeBaseline, pathBare, 20), measured(runtimeBaseline, pathDockerRun, 400),
			{Runtime: runtimeBaseline, Path: pathDockerRunRunsc, State: rowUnavailable, Reason: "the Docker daemon has no runtime \"runsc\""},
			measured(runtimeNative, pathCold, 80), {Runtime: runtimeDocker, Path: pathPooled, State: rowNotMeasured, Reason: "no pool yet"},
			measured(runtimeDocker, pathPooledAPI, 100), bad}}
	rep.Rows[0].Detail = "chroot /r /usr/bin/python3 -c \"print(1)\""
	setBaselineRatios(rep.Rows)
	var b bytes.Buffer
	printBenchRuntimes(&b, rep)
	// The table's columns are padded: compare its lines with their runs of
	// spaces made one.
	var lines []string
	for l := range strings.Lines(b.String()) {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	out := strings.Join(lines, "\n")
	for _, want := range []string{
		`python "print(1)" on datascience (sha256:ab), 3 rounds in 9s; 2 CPUs`,
		"runtime path runs errors p50 ms p90 ms max ms × docker run × docker run runsc × bare",
		// native cold: 80 ms, 0.2× docker run, no runsc baseline, 4× bare
		"native cold 3 0 80.0 160.0 240.0 0.200 - 4.000",
		"docker pooled - - - - - - - -",
		"docker pooled API 3 0 100.0 200.0 300.0 0.250 - 5.000",
		"docker pooled API / docker run: 0.250× (target ≤ 0.25×: meets)",
		"docker cold 3 2 500.0 1000.0 1500.0 1.250 - 25.000",
		"baseline bare: chroot /r /usr/bin/python3 -c \"print(1)\"",
		`baseline docker run runsc: unavailable: the Docker daemon has no runtime "runsc"`,
		"docker pooled: not measured: no pool yet",
		"docker cold, errors: 2\n2× run printed \"2\\n\", want \"1\\n\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchRuntimeRows(t *testing.T) {
	baselines := []string{"baseline bare", "baseline docker run", "baseline docker run runsc"}
	paths := func(rt string) []string {
		return []string{rt + " cold", rt + " pooled", rt + " pooled API", rt + " session cell"}
	}
	cases := []struct {
		name     string
		runtimes []string
		want     []string
	}{
		{"native", []string{runtimeNative}, append(slices.Clone(baselines), paths(runtimeNative)...)},
		{"gvisor then docker, in that order", []string{runtimeGVisor, runtimeDocker},
			slices.Concat(baselines, paths(runtimeGVisor), paths(runtimeDocker))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, r := range benchRuntimeRows(c.runtimes) {
				if r.open == nil {
					t.Errorf("%s %s: no open", r.runtime, r.path)
				}
				got = append(got, r.runtime+" "+r.path)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("rows %q, want %q", got, c.want)
			}
		})
	}
}

func TestBenchRuntimesFlagsCheck(t *testing.T) {
	ok := benchRuntimesFlags{runtimes: []string{runtimeNative}, image: "datascience", runs: 3}
	cases := []struct {
		name   string
		adjust func(*benchRuntimesFlags)
		want   string // "" for valid
	}{
		{"valid", func(*benchRuntimesFlags) {}, ""},
		{"a duration instead of runs", func(f *benchRuntimesFlags) { f.runs, f.duration = 0, 1 }, ""},
		{"no runtime", func(f *benchRuntimesFlags) { f.runtimes = nil }, "--runtime: name at least one"},
		{"a runtime twice", func(f *benchRuntimesFlags) { f.runtimes = []string{"docker", "native", "docker"} }, "--runtime: docker named twice"},
		{"unknown runtime", func(f *benchRuntimesFlags) { f.runtimes = []string{"kata"} }, `--runtime "kata": want native, docker or gvisor`},
		{"negative runs", func(f *benchRuntimesFlags) { f.runs = -1 }, "--runs -1: must be positive"},
		{"neither runs nor duration", func(f *benchRuntimesFlags) { f.runs = 0 }, "--runs or --duration must be positive"},
		{"host image", func(f *benchRuntimesFlags) { f.image = "host" }, `--image "host": name a built image`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := ok
			c.adjust(&f)
			err := f.check()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("check: %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("check: %v, want an error containing %q", err, c.want)
			}
		})
	}
}
