package linux_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// policyOutcome is what the code policy tests compare of a result.
type policyOutcome struct {
	Status    sandbox.Status
	Stdout    string
	Findings  string // "rule@line:col" joined by spaces
	Artifacts int
	Error     string // the structured error's type, if any
}

func policyOutcomeOf(res sandbox.Result) policyOutcome {
	var fs []string
	for _, f := range res.Findings {
		fs = append(fs, f.Rule+"@"+strconv.Itoa(f.Line)+":"+strconv.Itoa(f.Column))
	}
	o := policyOutcome{Status: res.Status, Stdout: string(res.Stdout), Findings: strings.Join(fs, " "), Artifacts: len(res.Artifacts)}
	if res.Error != nil {
		o.Error = res.Error.Type
	}
	return o
}

// TestPolicyInSandbox proves the Python policy is checked by the
// interpreter that runs the program, before its first line, on the cold
// path (a kernel started for the run) and the warm one alike: under
// block, a program that would print and write a file before its blocked
// import does neither; under warn it runs and the findings come with
// its result; a syntax error stays the SyntaxError it is; a tree too
// deep for the parser is "uncheckable", and blocked.
func TestPolicyInSandbox(t *testing.T) {
	block, warn := codecheck.Strict().Rules(sandbox.PolicyBlock), codecheck.Strict().Rules(sandbox.PolicyWarn)
	const before = "open('ran.txt', 'w').write('x')\nprint('ran')\nimport socket as s\n"
	cases := []struct {
		name  string
		rules *sandbox.CodeRules
		code  string
		want  policyOutcome
	}{
		{"block: nothing runs", block, before, policyOutcome{Status: sandbox.StatusBlocked, Findings: "blocked-import@3:1"}},
		{"warn: runs, findings kept", warn, before, policyOutcome{Status: sandbox.StatusOK, Stdout: "ran\n", Findings: "blocked-import@3:1", Artifacts: 1}},
		{"block: clean code runs", block, "import json\nprint(json.dumps([1]))", policyOutcome{Status: sandbox.StatusOK, Stdout: "[1]\n"}},
		{"block: syntax error is an error", block, "print('x')\ny = = 2", policyOutcome{Status: sandbox.StatusError, Error: "SyntaxError"}},
		{"block: too deep to check", block, strings.Repeat("not ", 100000) + "x", policyOutcome{Status: sandbox.StatusBlocked, Findings: "uncheckable@0:0"}},
		{"warn: script globals unchanged", warn, "print(sorted(globals()))",
			policyOutcome{Status: sandbox.StatusOK, Stdout: "['__annotations__', '__builtins__', '__cached__', '__doc__', '__file__', '__loader__', '__name__', '__package__', '__spec__']\n",
				Findings: "evasion-introspection@1:14"}},
	}
	cold := newRuntime(t, linux.Options{})
	warm := newRuntime(t, linux.Options{Warm: 1})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := sandbox.Request{Language: sandbox.Python, Code: tc.code, Rules: tc.rules}
			c := runProgram(t, cold, req)
			awaitWarm(t, warm)
			w := runProgram(t, warm, req)
			for name, res := range map[string]sandbox.Result{"cold": c, "warm": w} {
				if got := policyOutcomeOf(res); got != tc.want {
					t.Errorf("%s run:\n got %+v\nwant %+v\n(%s)", name, got, tc.want, describe(res))
				}
				if res.Status == sandbox.StatusBlocked && (res.ExitCode != -1 || res.Reason == "") {
					t.Errorf("%s run: blocked with exit code %d and reason %q, want -1 and a reason", name, res.ExitCode, res.Reason)
				}
			}
		})
	}
}

// TestPolicySessionCells proves a session's cells are checked by the
// kernel before they run: a blocked cell changes nothing in the
// session's namespace, the next cell runs, and warn keeps the findings.
func TestPolicySessionCells(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	s := newSession(t, rt, sandbox.Limits{})
	block, warn := codecheck.Strict().Rules(sandbox.PolicyBlock), codecheck.Strict().Rules(sandbox.PolicyWarn)
	cases := []struct {
		name  string
		cell  sandbox.Cell
		want  policyOutcome
		value string
	}{
		{"blocked cell runs nothing", sandbox.Cell{Code: "x = 1\nprint('ran')\nfrom subprocess import run", Rules: block},
			policyOutcome{Status: sandbox.StatusBlocked, Findings: "blocked-import@3:1"}, ""},
		{"x was never set", sandbox.Cell{Code: "'x' in dir()", Rules: block}, policyOutcome{Status: sandbox.StatusOK}, "False"},
		{"warn runs the cell", sandbox.Cell{Code: "y = eval('2 + 3')\ny", Rules: warn},
			policyOutcome{Status: sandbox.StatusOK, Findings: "blocked-call@1:5"}, "5"},
		{"no rules, no check", sandbox.Cell{Code: "import os\nos.getcwd()"}, policyOutcome{Status: sandbox.StatusOK}, "'/work'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := execCell(t, s, tc.cell)
			if got := policyOutcomeOf(res); got != tc.want || res.Value != tc.value {
				t.Errorf("got %+v value %q\nwant %+v value %q\n(%s)", got, res.Value, tc.want, tc.value, describe(res))
			}
		})
	}
}
