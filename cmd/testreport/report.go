package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // of build-output and build-fail events
}

// line is one line of a test's output.
type line struct {
	test, text string
}

// skip is a test that skipped, with the reason it gave.
type skip struct {
	Package, Test string
	// Where is the file:line of the call that skipped, "" if unknown.
	Where  string
	Reason string
	// Allowed is the allow list's entry that permits the skip, nil if
	// none does: the skip is unexpected.
	Allowed *allowed
}

// report reads a test2json stream and writes what `go test` without -v
// would have shown: the failing tests' output, each package's ok or FAIL
// line, build errors; it counts the tests and collects the skips.
type report struct {
	out   io.Writer
	allow []allowed

	passed, failed int
	skips          []skip
	// failedPackages counts packages that failed (tests, a build, or a
	// test binary that died).
	failedPackages int

	// ended is each test's state (run, then pass, fail or skip), by
	// package and test name.
	ended map[string]map[string]string
	// lines holds the output of each running top-level test and its
	// subtests, by package and top-level test name, in arrival order.
	lines map[string]map[string][]line
	// pkgOut holds each running package's own output.
	pkgOut map[string][]string
}

func newReport(out io.Writer, allow []allowed) *report {
	return &report{out: out, allow: allow, ended: map[string]map[string]string{}, lines: map[string]map[string][]line{}, pkgOut: map[string][]string{}}
}

// read handles every line of r: test2json events, and any other line
// (such as a message of the go command) written out as it is.
func (rp *report) read(r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		raw, err := br.ReadBytes('\n') // not a Scanner: a test may print a line of any length
		if len(raw) == 0 && err == io.EOF {
			rp.endUnended()
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		raw = bytes.TrimRight(raw, "\r\n")
		var e event
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &e) != nil || e.Action == "" {
			fmt.Fprintf(rp.out, "%s\n", raw)
			continue
		}
		rp.event(e)
	}
}

// event handles one event.
func (rp *report) event(e event) {
	switch {
	case e.Action == "build-output":
		io.WriteString(rp.out, e.Output)
	case e.Action == "build-fail":
		// Its output came as build-output; the package's fail follows.
	case e.Test == "":
		rp.packageEvent(e)
	default:
		rp.testEvent(e)
	}
}

// packageEvent handles an event of a package as a whole: its own output
// (the ok or FAIL line, what TestMain printed, a panic outside a test)
// and its end.
func (rp *report) packageEvent(e event) {
	switch e.Action {
	case "output":
		// Kept to the end, as go test does with several packages, so
		// that the ok or FAIL line comes last.
		if e.Output != "PASS\n" { // go test without -v does not print it
			rp.pkgOut[e.Package] = append(rp.pkgOut[e.Package], e.Output)
		}
	case "fail":
		rp.failedPackages++
		fallthrough
	case "pass", "skip":
		// A test still running when its package ended died with the
		// test binary (a panic, a timeout, os.Exit): it failed, and
		// what it printed is the evidence.
		for test, state := range rp.ended[e.Package] {
			if state == "run" {
				rp.ended[e.Package][test] = "fail"
				rp.failed++
			}
		}
		for top := range rp.lines[e.Package] {
			rp.flush(e.Package, top)
		}
		for _, o := range rp.pkgOut[e.Package] {
			io.WriteString(rp.out, o)
		}
		delete(rp.lines, e.Package)
		delete(rp.ended, e.Package)
		delete(rp.pkgOut, e.Package)
	}
}

// endUnended ends, as failed, every package the stream did not end (go
// test was killed), showing what its tests printed.
func (rp *report) endUnended() {
	pkgs := map[string]bool{}
	for p := range rp.ended {
		pkgs[p] = true
	}
	for p := range rp.pkgOut {
		pkgs[p] = true
	}
	for p := range pkgs {
		rp.packageEvent(event{Action: "fail", Package: p})
		fmt.Fprintf(rp.out, "FAIL\t%s: the test stream ended before the package did\n", p)
	}
}

// testEvent handles an event of one test or subtest.
func (rp *report) testEvent(e event) {
	top, _, _ := strings.Cut(e.Test, "/")
	if rp.lines[e.Package] == nil {
		rp.lines[e.Package] = map[string][]line{}
		rp.ended[e.Package] = map[string]string{}
	}
	switch e.Action {
	case "run":
		rp.ended[e.Package][e.Test] = "run"
		return
	case "output":
		rp.lines[e.Package][top] = append(rp.lines[e.Package][top], line{e.Test, e.Output})
		return
	case "pass":
		rp.passed++
	case "fail":
		rp.failed++
	case "skip":
		rp.skips = append(rp.skips, rp.skipOf(e.Package, e.Test))
	default: // pause, cont, bench: nothing to count
		return
	}
	rp.ended[e.Package][e.Test] = e.Action
	if e.Test == top {
		rp.flush(e.Package, top)
	}
}

// flush writes the output of top and its subtests that failed as go
// test without -v shows it (each test's "--- FAIL" line, then what it
// logged, a subtest indented under its parent), and forgets the rest.
func (rp *report) flush(pkg, top string) {
	var order []string          // the tests, as they started
	head := map[string]string{} // each test's "--- FAIL" line
	own := map[string][]string{}
	for _, l := range rp.lines[pkg][top] {
		if _, seen := own[l.test]; !seen {
			order = append(order, l.test)
			own[l.test] = []string{}
		}
		switch {
		case framing(l.text):
		case strings.HasPrefix(strings.TrimLeft(l.text, " "), "--- FAIL: "+l.test+" "):
			head[l.test] = strings.TrimLeft(l.text, " ")
		default:
			own[l.test] = append(own[l.test], l.text)
		}
	}
	for _, test := range order {
		if rp.ended[pkg][test] != "fail" {
			continue
		}
		indent := strings.Repeat("    ", strings.Count(test, "/"))
		h := head[test]
		if h == "" {
			h = "--- FAIL: " + test + " (did not end: the test binary exited)\n"
		}
		io.WriteString(rp.out, indent+h)
		for _, text := range own[test] {
			io.WriteString(rp.out, indent+text)
		}
	}
	delete(rp.lines[pkg], top)
}

// framing reports a line test2json's verbose stream adds that go test
// without -v does not print.
func framing(text string) bool {
	for _, p := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// logLine matches the start of a t.Log (or t.Skip) message: the file and
// line of its call, indented.
var logLine = regexp.MustCompile(`^\s*([\w.-]+\.go:\d+): `)

// skipOf returns the skip of test: the last message it logged (t.Skip's
// own, with its continuation lines), and where it was logged.
func (rp *report) skipOf(pkg, test string) skip {
	var own []string
	for _, l := range rp.lines[pkg][strings.SplitN(test, "/", 2)[0]] {
		if l.test == test && !framing(l.text) && !strings.Contains(l.text, "--- SKIP: ") {
			own = append(own, strings.TrimRight(l.text, "\n"))
		}
	}
	start := 0
	for i, l := range own {
		if logLine.MatchString(l) {
			start = i
		}
	}
	s := skip{Package: pkg, Test: test}
	var msg []string
	for i, l := range own[start:] {
		if i == 0 {
			if m := logLine.FindStringSubmatch(l); m != nil {
				s.Where = m[1]
				l = l[len(m[0]):]
			}
		}
		msg = append(msg, strings.TrimSpace(l))
	}
	s.Reason = strings.TrimSpace(strings.Join(msg, " "))
	for i := range rp.allow {
		if rp.allow[i].permits(s) {
			s.Allowed = &rp.allow[i]
			break
		}
	}
	return s
}

// unexpected returns the skips the allow list does not permit.
func (rp *report) unexpected() []skip {
	var out []skip
	for _, s := range rp.skips {
		if s.Allowed == nil {
			out = append(out, s)
		}
	}
	return out
}

// summary writes the skips, each with its reason, then the counts, in
// the line CI reads: "test: N passed, N failed, N skipped".
func (rp *report) summary(name string) {
	sort.SliceStable(rp.skips, func(i, j int) bool {
		if rp.skips[i].Package != rp.skips[j].Package {
			return rp.skips[i].Package < rp.skips[j].Package
		}
		return rp.skips[i].Test < rp.skips[j].Test
	})
	if len(rp.skips) > 0 {
		fmt.Fprintf(rp.out, "\n%s: %d skipped:\n", name, len(rp.skips))
	}
	for _, s := range rp.skips {
		verdict := "UNEXPECTED (not in the allow list)"
		if s.Allowed != nil {
			verdict = "allowed: " + s.Allowed.why
		}
		where := ""
		if s.Where != "" {
			where = " (" + s.Where + ")"
		}
		fmt.Fprintf(rp.out, "--- SKIP: %s %s%s: %s\n    %s\n", s.Package, s.Test, where, s.Reason, verdict)
	}
	n := len(rp.unexpected())
	fmt.Fprintf(rp.out, "%s: %d passed, %d failed, %d skipped", name, rp.passed, rp.failed, len(rp.skips))
	if n > 0 {
		fmt.Fprintf(rp.out, " (%d unexpected)", n)
	}
	if rp.failedPackages > 0 {
		fmt.Fprintf(rp.out, "; %d packages FAIL", rp.failedPackages)
	}
	fmt.Fprintln(rp.out)
}

// ok reports whether the stream showed no failure and no unexpected skip.
func (rp *report) ok() bool {
	return rp.failed == 0 && rp.failedPackages == 0 && len(rp.unexpected()) == 0
}
