package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestRunPolicy drives `crucible run --policy` on the real sandbox,
// starting with the done-when command: block ends "blocked" with
// the finding printed (rule, line, column, snippet), exit code 120, and
// nothing ran: the program's print and its file, both before the
// blocked import, never happened (the check is before the first line).
func TestRunPolicy(t *testing.T) {
	testenv.Root(t)
	const before = "open('ran.txt', 'w').write('x')\nprint('ran')\nimport socket\n"
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr []string
		ranFile    bool
	}{
		{"done when", []string{"--policy", "block", "-c", "import socket"}, exitBlocked, "",
			[]string{"line 1, col 1: blocked-import: module socket is blocked (strict), by import: import socket", "crucible: blocked"}, false},
		{"block: nothing ran", []string{"--policy", "block", "-c", before}, exitBlocked, "",
			[]string{"line 3, col 1: blocked-import", "nothing ran"}, false},
		{"warn: ran, finding printed", []string{"--policy", "warn", "-c", before}, 0, "ran\n",
			[]string{"policy warn (strict): line 3, col 1: blocked-import: module socket would be blocked (strict), by import: import socket", "crucible: ok (exit 0)"}, true},
		{"warn: a call would be blocked", []string{"--policy", "warn", "-c", "print(eval('1+1'))"}, 0, "2\n",
			[]string{"blocked-call: eval would be blocked (strict)"}, false},
		{"warn: javascript would be blocked", []string{"--policy", "warn", "--lang", "js", "-c", "console.log('ran');\ntry { require('child_process') } catch (e) {}"}, 0, "ran\n",
			[]string{"policy warn (strict): line 2, col 15: blocked-import: module child_process would be blocked (strict)"}, false},
		{"warn: bash would be blocked", []string{"--policy", "warn", "--lang", "bash", "-c", "echo ran; command -v wget >/dev/null || true"}, 0, "ran\n",
			[]string{"blocked-command: command wget would be blocked (strict): a network tool"}, false},
		{"off: nothing checked", []string{"-c", before}, 0, "ran\n", []string{"crucible: ok (exit 0)"}, true},
		{"javascript", []string{"--policy", "block", "--lang", "js", "-c", "console.log('ran');\nrequire('child_process');"}, exitBlocked, "",
			[]string{"line 2, col 9: blocked-import: module child_process is blocked (strict)"}, false},
		{"bash", []string{"--policy", "block", "--lang", "bash", "-c", "echo ran; wget http://203.0.113.1/"}, exitBlocked, "",
			[]string{"line 1, col 11: blocked-command: command wget is blocked (strict): a network tool"}, false},
		{"unknown mode", []string{"--policy", "strictest", "-c", "print(1)"}, exitUsage, "",
			[]string{`invalid argument "strictest" for "--policy" flag: want off, warn or block`}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"run", "--out", out}, tc.args...)
			stdout, stderr, code := cli{}.run(t, args...)
			if code != tc.wantCode || stdout != tc.wantStdout {
				t.Errorf("exit %d stdout %q, want %d %q; stderr:\n%s", code, stdout, tc.wantCode, tc.wantStdout, stderr)
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(out, "ran.txt")); (err == nil) != tc.ranFile {
				t.Errorf("ran.txt saved: %v, want %v", err == nil, tc.ranFile)
			}
		})
	}
}

// TestRunPolicyJSON proves --json carries the policy and the findings.
func TestRunPolicyJSON(t *testing.T) {
	testenv.Root(t)
	stdout, stderr, code := cli{}.run(t, "run", "--json", "--policy", "block", "-c", "x = 1\nfrom os import system")
	var res sandbox.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not a Result (%v): %s\nstderr: %s", err, stdout, stderr)
	}
	if code != exitBlocked || res.Status != sandbox.StatusBlocked || res.Policy == nil || res.Policy.Mode != sandbox.PolicyBlock ||
		len(res.Findings) != 1 || res.Findings[0].Line != 2 || res.Findings[0].Snippet != "from os import system" {
		t.Errorf("exit %d, result %+v", code, res)
	}
}

// TestSessionPolicy proves `crucible session --policy block` checks each
// cell: the blocked cell prints its finding and runs nothing (its print
// never shows), the session goes on, and the exit code is 120.
func TestSessionPolicy(t *testing.T) {
	testenv.Root(t)
	cells := "x = 1\n# %%\nprint('ran')\nimport os\n# %%\nprint(x + 1)\n"
	stdout, stderr, code := cli{stdin: strings.NewReader(cells)}.run(t, "session", "--out", t.TempDir(), "--policy", "block")
	if code != exitBlocked || stdout != "2\n" {
		t.Errorf("exit %d stdout %q, want %d %q; stderr:\n%s", code, stdout, exitBlocked, "2\n", stderr)
	}
	if !strings.Contains(stderr, "line 2, col 1: blocked-import: module os is blocked (strict), by import: import os") {
		t.Errorf("stderr lacks the finding:\n%s", stderr)
	}
}
