package eval

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestPassAtK proves the estimator matches 1 - C(n-c, k) / C(n, k) on
// values computed by hand (and, for n = 200, exactly with Python's
// math.comb and fractions), including its edge cases: no correct sample,
// all correct, and fewer incorrect samples than k.
func TestPassAtK(t *testing.T) {
	cases := []struct {
		n, c, k int
		want    float64
	}{
		{10, 3, 1, 0.3},       // c/n
		{10, 3, 2, 24.0 / 45}, // 1 - C(7,2)/C(10,2) = 1 - 21/45
		{5, 0, 1, 0},          // nothing passed
		{5, 5, 3, 1},          // everything passed
		{4, 1, 4, 1},          // n-c < k: every k-subset holds the correct sample
		{1, 1, 1, 1},
		// float(1 - Fraction(comb(183, 10), comb(200, 10)))
		{200, 17, 10, 0.5974489015799118},
		// float(1 - Fraction(comb(183, 100), comb(200, 100)))
		{200, 17, 100, 0.99999636769084},
	}
	for _, c := range cases {
		if got := PassAtK(c.n, c.c, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PassAtK(n=%d, c=%d, k=%d) = %.17g, want %.17g", c.n, c.c, c.k, got, c.want)
		}
	}
}

// TestSummarize proves that pass@k is the mean of the per-problem
// estimates (not the pooled pass rate), that a k some problem has fewer
// samples than is reported in SkippedK instead of being computed (Skipped
// counting the problems short of samples and naming the one with fewest), and that
// outcomes are counted, with unjudged samples (a cancelled run leaves them
// as zero SampleResults) counted as "not_run" and not as any problem's
// samples.
func TestSummarize(t *testing.T) {
	problems := []Problem{{TaskID: "a"}, {TaskID: "b"}}
	res := func(id string, o Outcome) SampleResult {
		return SampleResult{TaskID: id, Outcome: o, Passed: o == OutcomePassed}
	}
	cases := []struct {
		name    string
		results []SampleResult
		ks      []int
		want    Summary
	}{{
		// a: 1 of 2 passed, b: 1 of 4 passed. Pooled, pass@1 would be
		// 2/6; per problem it is (1/2 + 1/4) / 2. pass@2 is
		// (1 + (1 - C(3,2)/C(4,2))) / 2 = (1 + 1/2) / 2; a has too few
		// samples for pass@3.
		name: "different n per problem",
		results: []SampleResult{
			res("a", OutcomePassed), res("a", OutcomeFailed),
			res("b", OutcomeTimeout), res("b", OutcomePassed), res("b", OutcomeMemoryLimit), res("b", OutcomeKilled),
		},
		ks: []int{3, 1, 2},
		want: Summary{
			Problems: 2, Samples: 6, Passed: 2,
			PassAtK:  map[string]float64{"pass@1": 0.375, "pass@2": 0.75},
			SkippedK: []int{3},
			Skipped:  []Skip{{K: 3, Short: 1, Fewest: 2, Example: "a"}},
			Outcomes: map[Outcome]int{OutcomePassed: 2, OutcomeFailed: 1, OutcomeTimeout: 1, OutcomeMemoryLimit: 1, OutcomeKilled: 1},
		},
	}, {
		// Two samples of a were never judged: a has one judged sample,
		// so pass@2 cannot be computed; the internal failure counts as
		// a sample of b that did not pass.
		name: "unjudged and internal",
		results: []SampleResult{
			res("a", OutcomePassed), {}, {},
			res("b", OutcomeInternal), res("b", OutcomePassed),
		},
		ks: []int{1, 2},
		want: Summary{
			Problems: 2, Samples: 5, Passed: 2,
			PassAtK:  map[string]float64{"pass@1": 0.75},
			SkippedK: []int{2},
			Skipped:  []Skip{{K: 2, Short: 1, Fewest: 1, Example: "a"}},
			Outcomes: map[Outcome]int{OutcomePassed: 2, OutcomeInternal: 1, "not_run": 2},
		},
	}, {
		name:    "a problem without samples",
		results: []SampleResult{res("a", OutcomePassed)},
		ks:      []int{1},
		want: Summary{
			Problems: 2, Samples: 1, Passed: 1,
			PassAtK:  map[string]float64{},
			SkippedK: []int{1},
			Skipped:  []Skip{{K: 1, Short: 1, Fewest: 0, Example: "b"}},
			Outcomes: map[Outcome]int{OutcomePassed: 1},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Summarize(problems, c.results, c.ks)
			if len(got.PassAtK) != len(c.want.PassAtK) {
				t.Errorf("PassAtK = %v, want %v", got.PassAtK, c.want.PassAtK)
			}
			for k, want := range c.want.PassAtK {
				if v, ok := got.PassAtK[k]; !ok || math.Abs(v-want) > 1e-12 {
					t.Errorf("PassAtK[%s] = %v (present %v), want %v", k, v, ok, want)
				}
			}
			got.PassAtK, c.want.PassAtK = nil, nil
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Summarize = %+v, want %+v", got, c.want)
			}
		})
	}
}

// writeFile writes content to a fresh file in a test's temporary directory
// and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantLineError checks that err is a *LineError at path:line whose message
// contains msg.
func wantLineError(t *testing.T, err error, path string, line int, msg string) {
	t.Helper()
	var le *LineError
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T), want a *LineError", err, err)
	}
	if le.File != path || le.Line != line || !strings.Contains(le.Msg, msg) {
		t.Errorf("error %q, want %s:%d containing %q", err, path, line, msg)
	}
}

// problemLine is a valid problem with the given task_id.
func problemLine(id string) string {
	return `{"task_id": "` + id + `", "prompt": "def f():\n", "entry_point": "f", "test": "def check(c):\n    assert c() == 1\n"}`
}

// TestLoadProblemsErrors proves that every kind of bad problems file is
// refused with the file and the 1-based line of the offence, counting
// blank lines, rather than skipped or loaded half-valid.
func TestLoadProblemsErrors(t *testing.T) {
	cases := []struct {
		name    string
		content string
		line    int
		msg     string
	}{
		{"malformed JSON after blank lines", problemLine("a") + "\n\n  \n{\"task_id\": \n", 4, "invalid JSON"},
		{"not an object", "[1, 2]\n", 1, "invalid JSON"},
		{"null line", "null\n", 1, "expected a JSON object"},
		{"missing task_id", `{"prompt": "p", "entry_point": "f", "test": "t"}`, 1, `missing field "task_id"`},
		{"null task_id", `{"task_id": null, "prompt": "p", "entry_point": "f", "test": "t"}`, 1, `missing field "task_id"`},
		{"empty task_id", `{"task_id": "", "prompt": "p", "entry_point": "f", "test": "t"}`, 1, `"task_id" must not be empty`},
		{"missing prompt", `{"task_id": "a", "entry_point": "f", "test": "t"}`, 1, `missing field "prompt"`},
		{"missing test", `{"task_id": "a", "prompt": "p", "entry_point": "f"}`, 1, `missing field "test"`},
		{"missing entry_point", `{"task_id": "a", "prompt": "p", "test": "t"}`, 1, `missing field "entry_point"`},
		{"non-string prompt", `{"task_id": "a", "prompt": 5, "entry_point": "f", "test": "t"}`, 1, `field "prompt" must be a string`},
		{"non-string task_id", `{"task_id": 7, "prompt": "p", "entry_point": "f", "test": "t"}`, 1, `field "task_id" must be a string`},
		{"non-string canonical_solution", `{"task_id": "a", "prompt": "p", "entry_point": "f", "test": "t", "canonical_solution": []}`, 1, `field "canonical_solution" must be a string`},
		{"entry_point injecting code", `{"task_id": "a", "prompt": "p", "entry_point": "f); import os #", "test": "t"}`, 1, "must be a Python identifier"},
		{"entry_point with a leading digit", `{"task_id": "a", "prompt": "p", "entry_point": "1f", "test": "t"}`, 1, "must be a Python identifier"},
		{"duplicate task_id", problemLine("a") + "\n" + problemLine("b") + "\n\n" + problemLine("a") + "\n", 4, `task_id "a" already defined at line 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "problems.jsonl", c.content)
			problems, err := LoadProblems(path)
			if problems != nil {
				t.Errorf("got problems %+v along with the error", problems)
			}
			wantLineError(t, err, path, c.line, c.msg)
		})
	}
}

// TestLoadEmptyFiles proves that a problems or samples file without a
// single entry is an error, not an evaluation of nothing.
func TestLoadEmptyFiles(t *testing.T) {
	for _, content := range []string{"", "\n  \n\n"} {
		path := writeFile(t, "empty.jsonl", content)
		if _, err := LoadProblems(path); err == nil || !strings.Contains(err.Error(), "no problems") {
			t.Errorf("LoadProblems(%q): error %v, want \"no problems\"", content, err)
		}
		if _, err := LoadSamples(path, []Problem{{TaskID: "a"}}); err == nil || !strings.Contains(err.Error(), "no samples") {
			t.Errorf("LoadSamples(%q): error %v, want \"no samples\"", content, err)
		}
	}
	if _, err := LoadProblems(filepath.Join(t.TempDir(), "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadProblems of a missing file: error %v, want one wrapping os.ErrNotExist", err)
	}
}

// TestLoadSamplesErrors proves that a sample file is checked against the
// problems line by line: a sample of an unknown problem, or one with both,
// neither or a non-string completion/solution, is refused with its line.
func TestLoadSamplesErrors(t *testing.T) {
	problems := []Problem{{TaskID: "a"}}
	cases := []struct {
		name    string
		content string
		line    int
		msg     string
	}{
		{"unknown task_id", `{"task_id": "a", "completion": "x"}` + "\n\n" + `{"task_id": "zz", "completion": "x"}`, 3, `task_id "zz" is not in the problems file`},
		{"missing task_id", `{"completion": "x"}`, 1, `missing field "task_id"`},
		{"completion and solution", `{"task_id": "a", "completion": "x", "solution": "y"}`, 1, "not both"},
		{"neither completion nor solution", `{"task_id": "a"}`, 1, `missing field "completion"`},
		{"null completion", `{"task_id": "a", "completion": null}`, 1, `missing field "completion"`},
		{"non-string completion", `{"task_id": "a", "completion": ["x"]}`, 1, `field "completion" must be a string`},
		{"non-string solution", `{"task_id": "a", "solution": 1}`, 1, `field "solution" must be a string`},
		{"malformed JSON", `{"task_id": "a", "completion": "x"}` + "\n" + `{"task_id": "a", "completion": "x}`, 2, "invalid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "samples.jsonl", c.content)
			samples, err := LoadSamples(path, problems)
			if samples != nil {
				t.Errorf("got samples %+v along with the error", samples)
			}
			wantLineError(t, err, path, c.line, c.msg)
		})
	}
}

// TestLoadValidFiles proves that valid files load with every field, line
// and index in place, that unknown fields (HumanEval's own extras, a
// model's metadata) are ignored rather than refused, and that an empty
// completion is a valid (if useless) sample.
func TestLoadValidFiles(t *testing.T) {
	ppath := writeFile(t, "problems.jsonl", "\n"+
		`{"task_id": "a", "prompt": "def f():\n", "entry_point": "f", "test": "T", "canonical_solution": "    return 1\n", "extra": {"x": [1]}}`+"\n"+
		`{"task_id": "b", "prompt": "P", "entry_point": "_g1", "test": "T2", "canonical_solution": null}`+"\n")
	problems, err := LoadProblems(ppath)
	if err != nil {
		t.Fatal(err)
	}
	wantProblems := []Problem{
		{TaskID: "a", Prompt: "def f():\n", EntryPoint: "f", Test: "T", CanonicalSolution: "    return 1\n", Line: 2},
		{TaskID: "b", Prompt: "P", EntryPoint: "_g1", Test: "T2", Line: 3},
	}
	if !reflect.DeepEqual(problems, wantProblems) {
		t.Errorf("LoadProblems = %+v, want %+v", problems, wantProblems)
	}

	spath := writeFile(t, "samples.jsonl",
		`{"task_id": "b", "completion": "", "model": "m", "temperature": 0.8}`+"\n\n"+
			`{"task_id": "a", "solution": "def f():\n    return 1\n", "completion": null}`+"\n")
	samples, err := LoadSamples(spath, problems)
	if err != nil {
		t.Fatal(err)
	}
	wantSamples := []Sample{
		{TaskID: "b", Index: 0, Line: 1},
		{TaskID: "a", Solution: "def f():\n    return 1\n", Index: 1, Line: 3},
	}
	if !reflect.DeepEqual(samples, wantSamples) {
		t.Errorf("LoadSamples = %+v, want %+v", samples, wantSamples)
	}
}

// TestCanonicalSamples proves that canonical samples are the problems'
// canonical solutions as completions, in order, and that a problem without
// one is an error naming it rather than a silently missing sample.
func TestCanonicalSamples(t *testing.T) {
	problems := []Problem{
		{TaskID: "a", CanonicalSolution: "    return 1\n", Line: 1},
		{TaskID: "b", CanonicalSolution: "    return 2\n", Line: 2},
	}
	samples, err := CanonicalSamples(problems)
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{{TaskID: "a", Completion: "    return 1\n", Index: 0}, {TaskID: "b", Completion: "    return 2\n", Index: 1}}
	if !reflect.DeepEqual(samples, want) {
		t.Errorf("CanonicalSamples = %+v, want %+v", samples, want)
	}

	problems = append(problems, Problem{TaskID: "c", Line: 7})
	if _, err := CanonicalSamples(problems); err == nil || !strings.Contains(err.Error(), `"c" (line 7) has no canonical_solution`) {
		t.Errorf("CanonicalSamples with a problem lacking one: error %v", err)
	}
}

// refusingRuntime fails the test if anything is run on it.
type refusingRuntime struct{ t *testing.T }

func (r refusingRuntime) Run(context.Context, sandbox.Request) (sandbox.Result, error) {
	r.t.Error("Runner.Run ran a sample; it should have refused its input first")
	return sandbox.Result{Status: sandbox.StatusInternal}, errors.New("refused")
}

// TestRunnerRefusesBadInput proves that Runner.Run checks its input before
// running anything: a problem without samples (pass@k over a subset would
// silently mean something else), a sample of an unknown problem, and
// invalid limits are errors, and no sandbox is started.
func TestRunnerRefusesBadInput(t *testing.T) {
	problems := []Problem{{TaskID: "a"}, {TaskID: "b"}}
	cases := []struct {
		name    string
		samples []Sample
		limits  sandbox.Limits
		msg     string
	}{
		{"problem without samples", []Sample{{TaskID: "a"}, {TaskID: "a", Index: 1}}, sandbox.Limits{}, `1 of 2 problems have no sample ([b]...)`},
		{"sample of an unknown problem", []Sample{{TaskID: "a"}, {TaskID: "b", Index: 1}, {TaskID: "x", Index: 2}}, sandbox.Limits{}, `sample 2: task_id "x" is not among the problems`},
		{"invalid limits", []Sample{{TaskID: "a"}, {TaskID: "b", Index: 1}}, sandbox.Limits{WallTimeMS: -1}, "wall_time_ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Runner{Runtime: refusingRuntime{t}, Concurrency: 2, Limits: c.limits}
			results, err := r.Run(context.Background(), problems, c.samples)
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("Run: error %v, want one containing %q", err, c.msg)
			}
			if results != nil {
				t.Errorf("Run returned results %+v along with the error", results)
			}
		})
	}
}

// TestProgram proves the exact layout of a checked program: the prompt
// and completion (or the solution instead of both), the guard line that
// stops a dangling decorator from reaching check, the tests, the call of
// check on the entry point, and the sentinel print after it.
func TestProgram(t *testing.T) {
	p := Problem{
		TaskID:     "t/0",
		Prompt:     "def add1(x):\n    \"\"\"Add one.\"\"\"\n",
		EntryPoint: "add1",
		Test:       "def check(candidate):\n    assert candidate(1) == 2\n",
	}
	cases := []struct {
		name   string
		sample Sample
		want   string
	}{
		{"completion", Sample{TaskID: "t/0", Completion: "    return x + 1\n"},
			"def add1(x):\n    \"\"\"Add one.\"\"\"\n    return x + 1\n\n" +
				"pass  # crucible: the tests follow\n" +
				"def check(candidate):\n    assert candidate(1) == 2\n\n" +
				"check(add1)\n" +
				"print('CRUCIBLE-EVAL-PASSED-00ff', flush=True)\n"},
		{"solution", Sample{TaskID: "t/0", Solution: "def add1(x):\n    return x + 1"},
			"def add1(x):\n    return x + 1\n" +
				"pass  # crucible: the tests follow\n" +
				"def check(candidate):\n    assert candidate(1) == 2\n\n" +
				"check(add1)\n" +
				"print('CRUCIBLE-EVAL-PASSED-00ff', flush=True)\n"},
	}
	for _, c := range cases {
		if got := Program(p, c.sample, "CRUCIBLE-EVAL-PASSED-00ff"); got != c.want {
			t.Errorf("%s: Program =\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// TestNewSentinel proves that every program gets a fresh, unguessable
// sentinel: 128 random bits in hex after the fixed prefix.
func TestNewSentinel(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := newSentinel()
		hex, ok := strings.CutPrefix(s, "CRUCIBLE-EVAL-PASSED-")
		if !ok || len(hex) != 32 || strings.Trim(hex, "0123456789abcdef") != "" {
			t.Fatalf("sentinel %q, want CRUCIBLE-EVAL-PASSED- and 32 hex digits", s)
		}
		if seen[s] {
			t.Fatalf("sentinel %q repeated", s)
		}
		seen[s] = true
	}
}

// TestJudge proves how a sandbox Result becomes a verdict: only a clean
// exit that printed this run's sentinel on a line of its own passes; a
// clean exit without it, a forged or partial sentinel, or the sentinel
// followed by a failure all fail; each limit maps to its own outcome; and
// a platform failure is internal, never a failed sample.
func TestJudge(t *testing.T) {
	const sentinel = "CRUCIBLE-EVAL-PASSED-0123456789abcdef0123456789abcdef"
	boom := &sandbox.ExecError{Type: "AssertionError", Line: 9}
	cases := []struct {
		name    string
		res     sandbox.Result
		outcome Outcome
		reason  string
	}{
		{"ok with the sentinel", sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data(sentinel + "\n")}, OutcomePassed, ""},
		{"ok with output and the sentinel", sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data("debug\n" + sentinel + "\n")}, OutcomePassed, ""},
		{"ok without the sentinel", sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data("1\n")}, OutcomeFailed, "exited with status 0 before the tests finished"},
		{"ok with a forged sentinel", sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data("CRUCIBLE-EVAL-PASSED-0000\n")}, OutcomeFailed, "exited with status 0 before the tests finished"},
		{"ok with the sentinel extended", sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data(sentinel + "0\n")}, OutcomeFailed, "exited with status 0 before the tests finished"},
		{"ok with the sentinel on stderr", sandbox.Result{Status: sandbox.StatusOK, Stderr: sandbox.Data(sentinel + "\n")}, OutcomeFailed, "exited with status 0 before the tests finished"},
		{"sentinel, then an exception", sandbox.Result{Status: sandbox.StatusError, ExitCode: 1, Stdout: sandbox.Data(sentinel + "\n"), Error: boom}, OutcomeFailed, ""},
		{"sentinel, then exit 3", sandbox.Result{Status: sandbox.StatusError, ExitCode: 3, Stdout: sandbox.Data(sentinel + "\n"), Reason: "exit status 3"}, OutcomeFailed, "exit status 3"},
		{"timeout", sandbox.Result{Status: sandbox.StatusTimeout, Reason: "wall-time limit of 3s reached", Stdout: sandbox.Data(sentinel + "\n")}, OutcomeTimeout, "wall-time limit of 3s reached"},
		{"cpu limit", sandbox.Result{Status: sandbox.StatusCPULimit, Reason: "cpu"}, OutcomeCPULimit, "cpu"},
		{"memory limit", sandbox.Result{Status: sandbox.StatusMemoryLimit, Reason: "mem"}, OutcomeMemoryLimit, "mem"},
		{"output limit", sandbox.Result{Status: sandbox.StatusOutputLimit, Reason: "out"}, OutcomeOutputLimit, "out"},
		{"killed", sandbox.Result{Status: sandbox.StatusKilled, Reason: "the program was ended by SIGKILL"}, OutcomeKilled, "the program was ended by SIGKILL"},
		{"internal", sandbox.Result{Status: sandbox.StatusInternal, Reason: "create cgroup: EBUSY"}, OutcomeInternal, "create cgroup: EBUSY"},
		{"blocked: nothing ran", sandbox.Result{Status: sandbox.StatusBlocked, Reason: "policy"}, OutcomeInternal, "policy"},
	}
	for _, c := range cases {
		outcome, reason := judge(c.res, sentinel)
		if outcome != c.outcome || reason != c.reason {
			t.Errorf("%s: judge = (%s, %q), want (%s, %q)", c.name, outcome, reason, c.outcome, c.reason)
		}
	}
}

// TestLoadGzipFiles proves that gzip-compressed problems and samples files
// (HumanEval.jsonl.gz, the form the reference harness ships) load exactly
// as their plain text does, whatever their names, and that a damaged gzip
// stream is refused with the file named rather than read as JSON.
func TestLoadGzipFiles(t *testing.T) {
	plain := problemLine("a") + "\n\n" + problemLine("b") + "\n"
	samples := `{"task_id": "b", "completion": "x"}` + "\n"
	gz := func(name, content string) string {
		var buf bytes.Buffer
		z := gzip.NewWriter(&buf)
		if _, err := z.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		return writeFile(t, name, buf.String())
	}
	want, err := LoadProblems(writeFile(t, "problems.jsonl", plain))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"HumanEval.jsonl.gz", "problems.jsonl"} {
		got, err := LoadProblems(gz(name, plain))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("LoadProblems(gzip %s) = %+v, %v; want %+v", name, got, err, want)
		}
		s, err := LoadSamples(gz("samples-"+name, samples), want)
		if err != nil || len(s) != 1 || s[0].TaskID != "b" || s[0].Completion != "x" {
			t.Errorf("LoadSamples(gzip %s) = %+v, %v", name, s, err)
		}
	}
	damaged := gz("damaged.jsonl.gz", plain)
	content, _ := os.ReadFile(damaged)
	if err := os.WriteFile(damaged, content[:len(content)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadProblems(damaged); err == nil || !strings.Contains(err.Error(), damaged) {
		t.Errorf("LoadProblems(truncated gzip): error %v, want one naming the file", err)
	}
}
