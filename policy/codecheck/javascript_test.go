package codecheck_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// summary formats findings as "rule@line:col" joined by spaces.
func summary(fs []sandbox.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule+"@"+strconv.Itoa(f.Line)+":"+strconv.Itoa(f.Column))
	}
	return strings.Join(out, " ")
}

func TestCheckJavaScript(t *testing.T) {
	cases := []struct {
		name, code, want string
	}{
		{"require", "const fs = require('fs');", "blocked-import@1:20"},
		{"node: prefix", `const cp = require("node:child_process");`, "blocked-import@1:20"},
		{"template literal", "const net = require(`net`);", "blocked-import@1:21"},
		{"import declaration", "import fs from 'fs';\nconsole.log(1);", "blocked-import@1:16"},
		{"subpath", `import { readFile } from "fs/promises";`, "blocked-import@1:26"},
		{"export from", "export * from 'vm';", "blocked-import@1:15"},
		{"dynamic import()", "import('worker_threads').then(() => {});", "blocked-import@1:8"},
		{"module.require", "module.require('http');", "blocked-import@1:16"},
		{"computed name", "const m = 'f' + 's';\nrequire(m);", "dynamic-import@2:1"},
		{"process.binding", "process.binding('spawn_sync');", "evasion-member@1:1"},
		{"process['binding']", "process['binding']('fs');", "evasion-member@1:1"},
		{"process.binding read", "const b = process.binding;", "evasion-member@1:11"},
		{"module loader", "module.constructor._load('child_process');", "evasion-member@1:1"},
		{"require.cache", "delete require.cache[k];", "evasion-member@1:8"},
		{"require.resolve is no alias", "console.log(require.resolve('path'));", ""},
		{"nested function", "function a() {\n  return function b() {\n    return require('dgram');\n  };\n}", "blocked-import@3:20"},
		{"in comments and strings", "// require('fs')\n/* import fs from 'fs' */\nconsole.log(\"require('fs')\");", ""},
		{"allowed module", "const path = require('path');\nconst util = require('node:util');", ""},
		{"a name that only starts like one", "require('fsevents');", ""},
		{"another object's require", "loader.require('fs');", ""},
		{"require aliased", "const r = require;\nr('fs');", "dynamic-import@1:11"},
		{"require returned", "function f() {\n  return require;\n}", "dynamic-import@2:10"},
		{"line and column in characters", "const é = 1; require('net');", "blocked-import@1:22"},
		{"syntax error", "function (", "uncheckable@1:10"},
		{"too large to check", strings.Repeat("x = 1;\n", codecheck.MaxJavaScriptBytes/7+1), "uncheckable@0:0"},
		{"too deep for the parser", strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000), "uncheckable@1:1001"},
	}
	strict := codecheck.Strict()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := codecheck.CheckJavaScript(tc.code, &strict, sandbox.PolicyBlock)
			if s := summary(got); s != tc.want {
				t.Errorf("CheckJavaScript(%.60q) = %q, want %q (%v)", tc.code, s, tc.want, got)
			}
			for _, f := range got {
				if f.Line > 0 && f.Snippet == "" || f.Message == "" {
					t.Errorf("finding %+v lacks a snippet or a message", f)
				}
			}
		})
	}
}
