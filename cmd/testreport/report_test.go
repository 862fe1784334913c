package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// stream builds a test2json stream of events, each "action package test
// output" with fields separated by "|" (test and output may be empty).
func stream(t *testing.T, events ...string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		f := strings.SplitN(e, "|", 4)
		for len(f) < 4 {
			f = append(f, "")
		}
		j, err := json.Marshal(map[string]string{"Action": f[0], "Package": f[1], "Test": f[2], "Output": f[3]})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// skipAllowList permits TestSoak of package e2e to skip for -soak.
const skipAllowList = `# The soak takes minutes: scripts/test.sh --soak runs it on its own.
e2e TestSoak runs only with -soak
`

func TestReport(t *testing.T) {
	const pkg = "github.com/crucible-sandbox/crucible/e2e"
	tests := []struct {
		name                    string
		events                  []string
		passed, failed, skipped int
		unexpected              int
		ok                      bool
		want, notWant           []string // in the output, and not in it
		wantWhere, wantReason   string   // of the first skip
	}{
		{
			name: "passing tests show only the ok line",
			events: []string{
				"run|" + pkg + "|TestA", "output|" + pkg + "|TestA|=== RUN   TestA\n", "output|" + pkg + "|TestA|    a_test.go:3: chatter\n",
				"output|" + pkg + "|TestA|--- PASS: TestA (0.00s)\n", "pass|" + pkg + "|TestA",
				"output|" + pkg + "||PASS\n", "output|" + pkg + "||ok  \t" + pkg + "\t0.1s\n", "pass|" + pkg,
			},
			passed: 1, ok: true,
			want:    []string{"ok  \t" + pkg + "\t0.1s\n", "test: 1 passed, 0 failed, 0 skipped\n"},
			notWant: []string{"chatter", "=== RUN", "--- PASS", "PASS\n"},
		},
		{
			name: "a failing subtest shows its output and the FAIL lines, not its passing sibling's",
			events: []string{
				"run|" + pkg + "|TestA", "output|" + pkg + "|TestA|=== RUN   TestA\n",
				"run|" + pkg + "|TestA/good", "output|" + pkg + "|TestA/good|    a_test.go:4: fine\n", "output|" + pkg + "|TestA/good|--- PASS: TestA/good (0.00s)\n", "pass|" + pkg + "|TestA/good",
				"run|" + pkg + "|TestA/bad", "output|" + pkg + "|TestA/bad|    a_test.go:5: boom\n", "output|" + pkg + "|TestA/bad|--- FAIL: TestA/bad (0.00s)\n", "fail|" + pkg + "|TestA/bad",
				"output|" + pkg + "|TestA|--- FAIL: TestA (0.00s)\n", "fail|" + pkg + "|TestA",
				"output|" + pkg + "||FAIL\t" + pkg + "\t0.1s\n", "fail|" + pkg,
			},
			passed: 1, failed: 2,
			want:    []string{"--- FAIL: TestA (0.00s)\n    --- FAIL: TestA/bad (0.00s)\n        a_test.go:5: boom\n", "FAIL\t" + pkg, "test: 1 passed, 2 failed, 0 skipped; 1 packages FAIL\n"},
			notWant: []string{"fine", "=== RUN"},
		},
		{
			name: "a skip not on the allow list is unexpected, with its reason and place",
			events: []string{
				"run|" + pkg + "|TestUI", "output|" + pkg + "|TestUI|    ui_test.go:9: a log line first\n",
				"output|" + pkg + "|TestUI|    testenv.go:35: skipping: needs root: the native sandbox\n", "output|" + pkg + "|TestUI|        (run as root)\n",
				"output|" + pkg + "|TestUI|--- SKIP: TestUI (0.00s)\n", "skip|" + pkg + "|TestUI", "pass|" + pkg,
			},
			skipped: 1, unexpected: 1,
			want:       []string{"--- SKIP: " + pkg + " TestUI (testenv.go:35): skipping: needs root: the native sandbox (run as root)\n    UNEXPECTED", "test: 0 passed, 0 failed, 1 skipped (1 unexpected)\n"},
			wantWhere:  "testenv.go:35",
			wantReason: "skipping: needs root: the native sandbox (run as root)",
		},
		{
			name: "a skip on the allow list, for its reason, is allowed",
			events: []string{
				"run|" + pkg + "|TestSoak", "output|" + pkg + "|TestSoak|    soak_test.go:56: not run: the soak runs only with -soak (scripts/test.sh --soak)\n",
				"skip|" + pkg + "|TestSoak", "pass|" + pkg,
			},
			skipped: 1, ok: true,
			want:       []string{"allowed: The soak takes minutes: scripts/test.sh --soak runs it on its own.", "test: 0 passed, 0 failed, 1 skipped\n"},
			wantReason: "not run: the soak runs only with -soak (scripts/test.sh --soak)",
		},
		{
			name: "the allowed test skipping for another reason is unexpected",
			events: []string{
				"run|" + pkg + "|TestSoak", "output|" + pkg + "|TestSoak|    testenv.go:35: skipping: needs root\n", "skip|" + pkg + "|TestSoak", "pass|" + pkg,
			},
			skipped: 1, unexpected: 1,
		},
		{
			name: "a skipped subtest counts, its passing parent too",
			events: []string{
				"run|" + pkg + "|TestA", "run|" + pkg + "|TestA/s", "output|" + pkg + "|TestA/s|    a_test.go:2: sub reason\n", "skip|" + pkg + "|TestA/s",
				"pass|" + pkg + "|TestA", "pass|" + pkg,
			},
			passed: 1, skipped: 1, unexpected: 1,
			want:       []string{pkg + " TestA/s (a_test.go:2): sub reason"},
			wantReason: "sub reason",
		},
		{
			name: "a test the binary died in fails, with what it printed",
			events: []string{
				"run|" + pkg + "|TestSlow", "output|" + pkg + "|TestSlow|=== RUN   TestSlow\n", "output|" + pkg + "|TestSlow|panic: test timed out after 2s\n",
				"output|" + pkg + "||FAIL\t" + pkg + "\t2.0s\n", "fail|" + pkg,
			},
			failed: 1,
			want:   []string{"--- FAIL: TestSlow (did not end: the test binary exited)\npanic: test timed out after 2s\nFAIL\t" + pkg + "\t2.0s\n", "test: 0 passed, 1 failed, 0 skipped; 1 packages FAIL"},
		},
		{
			name: "a stream cut short fails its package, with what its test printed",
			events: []string{
				"run|" + pkg + "|TestA", "output|" + pkg + "|TestA|    a_test.go:3: half way\n",
			},
			failed: 1,
			want:   []string{"--- FAIL: TestA (did not end: the test binary exited)\n    a_test.go:3: half way\nFAIL\t" + pkg + ": the test stream ended before the package did\n", "; 1 packages FAIL"},
		},
		{
			name: "a build failure is shown and fails",
			events: []string{
				`build-output|||# ` + pkg + "\n", `build-output|||e2e/x_test.go:5:28: undefined: nope` + "\n", "build-fail",
				"output|" + pkg + "||FAIL\t" + pkg + " [build failed]\n", "fail|" + pkg,
			},
			want: []string{"undefined: nope\n", "[build failed]\n", "; 1 packages FAIL"},
		},
		{
			name:   "a line that is not an event is written as it is",
			events: nil,
			ok:     true,
			want:   []string{"go: downloading example.com/m v1.0.0\n"},
		},
	}
	allow, err := parseAllow(strings.NewReader(skipAllowList))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := stream(t, tt.events...)
			if tt.events == nil {
				in = "go: downloading example.com/m v1.0.0\n"
			}
			var out strings.Builder
			rp := newReport(&out, allow)
			if err := rp.read(strings.NewReader(in)); err != nil {
				t.Fatal(err)
			}
			rp.summary("test")
			got := out.String()
			if rp.passed != tt.passed || rp.failed != tt.failed || len(rp.skips) != tt.skipped || len(rp.unexpected()) != tt.unexpected || rp.ok() != tt.ok {
				t.Errorf("passed %d, failed %d, skipped %d, unexpected %d, ok %v; want %d, %d, %d, %d, %v\n%s",
					rp.passed, rp.failed, len(rp.skips), len(rp.unexpected()), rp.ok(), tt.passed, tt.failed, tt.skipped, tt.unexpected, tt.ok, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("output has %q:\n%s", w, got)
				}
			}
			if tt.wantReason != "" && (rp.skips[0].Reason != tt.wantReason || tt.wantWhere != "" && rp.skips[0].Where != tt.wantWhere) {
				t.Errorf("skip %+v, want reason %q at %q", rp.skips[0], tt.wantReason, tt.wantWhere)
			}
		})
	}
}

// TestReportGo126 reads a stream go test -json of Go 1.26 wrote
// (testdata/go1.26.json: a pass, a failing subtest, skips, a panic, a
// build failure, a timeout) and checks what it counts and shows.
func TestReportGo126(t *testing.T) {
	f, err := os.Open("testdata/go1.26.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	rp := newReport(&out, nil)
	if err := rp.read(f); err != nil {
		t.Fatal(err)
	}
	rp.summary("test")
	got := out.String()
	// Passed: TestPass, TestFail/ok, TestSubSkip, p2's TestOK. Failed:
	// TestFail/bad, TestFail, TestPanic, p4's TestSlow (timed out).
	if rp.passed != 4 || rp.failed != 4 || len(rp.skips) != 2 || rp.failedPackages != 4 || rp.ok() {
		t.Errorf("passed %d, failed %d, skipped %d, packages failed %d, ok %v; want 4, 4, 2, 4, false\n%s",
			rp.passed, rp.failed, len(rp.skips), rp.failedPackages, rp.ok(), got)
	}
	for _, w := range []string{
		"--- FAIL: TestFail (0.00s)\n    --- FAIL: TestFail/bad (0.00s)\n        a_test.go:8: boom\n            second line\nFAIL\n",
		"FAIL\ttrdemo\t0.056s\n",
		"--- FAIL: TestPanic (0.00s)\npanic: oops",
		"p3/c_test.go:5:28: undefined: undefined\n",
		"FAIL\ttrdemo/p3 [build failed]\n",
		"--- FAIL: TestSlow (did not end: the test binary exited)\n    d_test.go:8: started\npanic: test timed out after 2s\n",
		"--- SKIP: trdemo TestSkip (a_test.go:10): skipping: needs root (more)\n",
		"--- SKIP: trdemo TestSubSkip/s (a_test.go:12): sub reason\n",
		"test: 4 passed, 4 failed, 2 skipped (2 unexpected); 4 packages FAIL\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
	for _, w := range []string{"a_test.go:5: quiet", "a_test.go:7: fine", "=== RUN", "a_test.go:10: before"} {
		if strings.Contains(got, w) {
			t.Errorf("output has %q:\n%s", w, got)
		}
	}
}

func TestParseAllow(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
		want              []allowed
	}{
		{"entries with their comments", "# why one\n# more\ne2e TestSoak runs only  with -soak\n\n# why two\nsandbox/linux TestX cgroup v2\n", "",
			[]allowed{{"e2e", "TestSoak", "runs only  with -soak", "why one more"}, {"sandbox/linux", "TestX", "cgroup v2", "why two"}}},
		{"empty", "", "", nil},
		{"no comment", "e2e TestSoak -soak\n", "line 1: the entry for e2e TestSoak needs a comment above it", nil},
		{"a comment for the entry above only", "# why\ne2e TestA a\ne2e TestB b\n", "line 3: the entry for e2e TestB needs a comment", nil},
		{"no reason", "# why\ne2e TestSoak\n", "line 2: want the package, the test and a part of the skip's message", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAllow(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("entry %d: %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
