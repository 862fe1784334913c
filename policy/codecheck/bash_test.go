package codecheck_test

import (
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
)

func TestCheckBash(t *testing.T) {
	cases := []struct {
		name, code, want string
	}{
		{"curl", "curl https://example.com", "blocked-command@1:1"},
		{"by path, after another command", "echo hi; /usr/bin/wget x", "blocked-command@1:10"},
		{"after a wrapper", "env -i curl x", "blocked-command@1:8"},
		{"wrapper then tool", "xargs wget < urls", "blocked-command@1:7"},
		{"in a pipeline", "cat f | nc host 80", "blocked-command@1:9"},
		{"nested", "if true; then\n  ssh host\nfi", "blocked-command@2:3"},
		{"in a command substitution", "x=$(scp a b:)", "blocked-command@1:5"},
		{"as an argument", "echo curl wget", ""},
		{"in comments and strings", "# curl x\necho \"curl x\"", ""},
		{"in a variable (not seen)", "c=curl\n$c x", ""},
		{"syntax error", "if then", "uncheckable@1:1"},
		{"too deep", strings.Repeat("(", 200) + "true" + strings.Repeat(")", 200), "uncheckable@0:0"},
		{"closers in strings hide nothing", strings.Repeat("$(", 150) + "echo '" + strings.Repeat(")", 150) + "'", "uncheckable@0:0"},
		{"too large", strings.Repeat("echo hi\n", codecheck.MaxBashBytes/8+1), "uncheckable@0:0"},
	}
	strict := codecheck.Strict()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := codecheck.CheckBash(tc.code, &strict, sandbox.PolicyBlock)
			if s := summary(got); s != tc.want {
				t.Errorf("CheckBash(%.60q) = %q, want %q (%v)", tc.code, s, tc.want, got)
			}
		})
	}
}

// TestFindingWords: a finding says what the mode does with what it
// names: the program "is blocked" in block mode, and in warn mode, where
// it runs, the thing "would be blocked".
func TestFindingWords(t *testing.T) {
	strict := codecheck.Strict()
	for _, tc := range []struct {
		lang sandbox.Language
		code string
		mode sandbox.PolicyMode
		want string
	}{
		{sandbox.Bash, "wget x", sandbox.PolicyBlock, "command wget is blocked (strict): a network tool"},
		{sandbox.Bash, "wget x", sandbox.PolicyWarn, "command wget would be blocked (strict): a network tool"},
		{sandbox.JavaScript, "require('net')", sandbox.PolicyBlock, "module net is blocked (strict), by require"},
		{sandbox.JavaScript, "require('net')", sandbox.PolicyWarn, "module net would be blocked (strict), by require"},
	} {
		t.Run(string(tc.lang)+" "+string(tc.mode), func(t *testing.T) {
			found, _ := codecheck.CheckOnHost(tc.lang, tc.code, &strict, tc.mode)
			if len(found) != 1 || found[0].Message != tc.want {
				t.Errorf("findings %v, want one saying %q", found, tc.want)
			}
		})
	}
}
