package codecheck_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// TestCheckPython runs the Python checker where it runs for real: in a
// native sandbox's kernel, on each case as a session cell under the
// strict preset in block mode, so that a cell with findings runs none of
// its code and a cell without runs (each is harmless then). It shows what
// is caught, and what is not: a name computed at run time.
func TestCheckPython(t *testing.T) {
	testenv.Root(t)
	rt, err := linux.New(linux.Options{})
	if err != nil {
		t.Fatalf("linux.New: %v", err)
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	rules := codecheck.Strict.Rules(sandbox.PolicyBlock)
	cases := []struct {
		name, code, want string
		status           sandbox.Status // of a cell without findings; blocked with
	}{
		{"import", "import socket", "blocked-import@1:1", ""},
		{"aliased import", "import socket as s", "blocked-import@1:1", ""},
		{"submodule", "import os.path", "blocked-import@1:1", ""},
		{"from-import", "from os import system", "blocked-import@1:1", ""},
		{"from a submodule", "from urllib.request import urlopen", "blocked-import@1:1", ""},
		{"C core of a blocked module", "import posix", "blocked-import@1:1", ""},
		{"__import__ with a literal", `m = __import__("os")`, "blocked-import@1:5 blocked-call@1:5", ""},
		{"importlib.import_module", "import importlib\nimportlib.import_module('subprocess')", "blocked-import@1:1 blocked-import@2:1", ""},
		{"import_module by another path", "from importlib import import_module as im\nim('subprocess')", "blocked-import@1:1", ""},
		{"__import__ of a computed name", `__import__("o" + "s")`, "dynamic-import@1:1 blocked-call@1:1", ""},
		{"eval", "eval('1')", "blocked-call@1:1", ""},
		{"exec named, not called", "run = exec", "blocked-call@1:7", ""},
		{"compile", "code = compile('1', 'x', 'eval')", "blocked-call@1:8", ""},
		{"getattr dunder", "f = getattr(int, '__subclasses__')", "evasion-getattr@1:5", ""},
		{"getattr of a blocked builtin's name", "import math\ngetattr(math, 'eval')", "evasion-getattr@2:1", ""},
		{"getattr with a computed name (not caught as such)", "getattr(__builtins__, 'ev' + 'al')", "evasion-attribute@1:9", ""},
		{"globals()", "g = globals()", "evasion-introspection@1:5", ""},
		{"vars()", "v = vars()", "evasion-introspection@1:5", ""},
		{"dunder chain", "().__class__.__bases__[0].__subclasses__()", "evasion-attribute@1:1 evasion-attribute@1:1", ""},
		{"function globals", "def f(): pass\nf.__globals__", "evasion-attribute@2:1", ""},
		{"sys.modules reaches os", "import sys\nsys.modules['os'].system('id')", "evasion-member@2:1", ""},
		{"sys aliased", "import sys as s\nm = s.modules", "evasion-member@2:5", ""},
		{"member imported", "from sys import modules", "evasion-member@1:1", ""},
		{"a frame's globals", "import inspect\ninspect.currentframe().f_globals", "evasion-attribute@2:1 evasion-member@2:1", ""},
		{"sys itself is allowed", "import sys\nsys.version_info[0]", "", sandbox.StatusOK},
		{"nested functions", "def f():\n    def g():\n        import subprocess\n    return g", "blocked-import@3:9", ""},
		{"method of a class", "class A:\n    def m(self):\n        from ctypes import CDLL", "blocked-import@3:9", ""},
		{"lambda", "h = lambda: __import__('pty')", "blocked-import@1:13 blocked-call@1:13", ""},
		{"column in characters", "s = 'é'; eval(s)", "blocked-call@1:10", ""},
		{"in a string and a comment: not flagged", "x = 'import os'  # import socket\nprint('eval(1)')", "", sandbox.StatusOK},
		{"an attribute named like a builtin: not flagged", "import re\nre.compile('x')", "", sandbox.StatusOK},
		{"allowed module", "import json as j\nj.dumps(1)", "", sandbox.StatusOK},
		{"syntax error: the error it is", "import (", "", sandbox.StatusError},
		{"too deep to parse", strings.Repeat("not ", 100000) + "x", "uncheckable@0:0", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sess.Exec(ctx, sandbox.Cell{Code: tc.code, Rules: rules})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.status
			if tc.want != "" {
				want = sandbox.StatusBlocked
			}
			if got := summary(res.Findings); got != tc.want || res.Status != want {
				t.Errorf("findings %q status %s, want %q %s (%+v)", got, res.Status, tc.want, want, res.Findings)
			}
			if res.Status == sandbox.StatusError && (res.Error == nil || res.Error.Type != "SyntaxError") {
				t.Errorf("error %+v, want a SyntaxError", res.Error)
			}
		})
	}
}
