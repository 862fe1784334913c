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
// is caught (issue 23's rows: each way from an object to builtins, frames,
// code objects or a blocked module, literal or computed at run time), and
// what an analyst writes that stays allowed.
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
	rules := codecheck.Strict().Rules(sandbox.PolicyBlock)
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
		{"getattr with a computed name", "getattr(__builtins__, 'ev' + 'al')", "evasion-getattr@1:1 evasion-attribute@1:9", ""},
		{"globals()", "g = globals()", "evasion-introspection@1:5", ""},
		{"vars()", "v = vars()", "evasion-introspection@1:5", ""},
		{"dunder chain", "().__class__.__bases__[0].__subclasses__()", "evasion-attribute@1:1 evasion-attribute@1:1", ""},
		{"function globals", "def f(): pass\nf.__globals__", "evasion-attribute@2:1", ""},
		{"sys.modules reaches os", "import sys\nsys.modules['os'].system('id')", "evasion-member@2:1", ""},
		{"sys aliased", "import sys as s\nm = s.modules", "evasion-member@2:5", ""},
		{"member imported", "from sys import modules", "evasion-member@1:1", ""},
		{"a frame's globals", "import sys\nsys._getframe().f_globals", "evasion-attribute@2:1 evasion-member@2:1", ""},
		{"sys itself is allowed", "import sys\nsys.version_info[0]", "", sandbox.StatusOK},
		// Issue 23: what reaches builtins, frames, code objects and modules
		// by a way the rules above did not see.
		{"__self__ of a builtin is builtins", `getattr(print.__self__, "_"+"_import__")("os")`, "evasion-getattr@1:1 evasion-attribute@1:9", ""},
		{"__self__ by a computed name", `getattr(getattr(print, "__se"+"lf__"), "x")`, "evasion-getattr@1:9", ""},
		{"setattr of a computed name", "setattr(x, name, 1)", "evasion-getattr@1:1", ""},
		{"delattr of a computed name", "delattr(x, name)", "evasion-getattr@1:1", ""},
		{"getattr's arguments unpacked", `getattr(*[print, "__self__"])`, "evasion-getattr@1:1 evasion-attribute@1:18", ""},
		{"getattr named as a value", "g = getattr", "evasion-getattr@1:5", ""},
		{"getattr passed to reduce", "import functools\nfunctools.reduce(getattr, [\"__se\"+\"lf__\"], print)", "evasion-getattr@2:18", ""},
		{"attrgetter of a dotted dunder", "from operator import attrgetter as ag\nag(\"__self__.__import__\")(print)", "evasion-getattr@2:1", ""},
		{"attrgetter of a computed name", "import operator\noperator.attrgetter(\"__se\" + \"lf__\")", "evasion-getattr@2:1", ""},
		{"methodcaller named as a value", "import operator\nm = operator.methodcaller", "evasion-getattr@2:5", ""},
		{"a format field walks __self__", `"{0.__self__}".format(print)`, "evasion-attribute@1:1", ""},
		{"string.Formatter resolves fields", "import string\nstring.Formatter().get_field(\"0.__se\" + \"lf__\", [print], {})", "evasion-member@2:1", ""},
		{"a module's __dict__", "import tempfile\ntempfile.__dict__[\"_o\" + \"s\"]", "evasion-attribute@2:1", ""},
		{"a method's __func__", "class A:\n    def m(self): pass\nA().m.__func__", "evasion-attribute@3:1", ""},
		{"a module's __spec__", "import json\njson.__spec__.loader", "evasion-attribute@2:1", ""},
		{"enum's alias of builtins", "import enum\nenum.bltns.exec(\"1\")", "evasion-attribute@2:1", ""},
		{"a library's alias of multiprocessing", "import sklearn.utils.fixes as f\nf.mp.reduction.ForkingPickler.loads(b'')", "evasion-attribute@2:1", ""},
		{"os as another module's attribute", "import glob\nglob.os.getpid()", "blocked-import@2:1", ""},
		{"os under a private alias", "import tempfile as t\nt._os.getpid()", "blocked-import@2:1", ""},
		{"os imported from another module", "from tempfile import _os", "blocked-import@1:1", ""},
		{"a blocked module's member named like it: one finding", "from socket import socket", "blocked-import@1:1", ""},
		{"getattr of a module's name", "import glob\ngetattr(glob, \"os\")", "blocked-import@2:1", ""},
		{"sys.modules by a private alias", "import tempfile\ntempfile._sys.modules[\"os\"]", "evasion-member@2:1", ""},
		{"the importers of sys.meta_path", "import sys\nsys.meta_path[0]", "evasion-member@2:1", ""},
		{"a traceback's frame", "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame.f_back", "evasion-attribute@4:5 evasion-attribute@4:5", ""},
		{"a generator's frame", "def g():\n    yield 1\ng().gi_frame", "evasion-attribute@3:1", ""},
		{"a generator's code", "def g():\n    yield XX(\"os\")\nc = g().gi_code.replace(co_names=(\"x\",))", "evasion-attribute@3:5", ""},
		{"a coroutine's frame", "async def c(): pass\nc().cr_frame", "evasion-attribute@2:1", ""},
		{"a frame's code", "import sys\nsys._getframe().f_code", "evasion-attribute@2:1 evasion-member@2:1", ""},
		{"code objects built", "import types\ntypes.CodeType", "evasion-member@2:1", ""},
		{"code objects from bytes", "import marshal", "blocked-import@1:1", ""},
		{"inspect's getmembers", "import inspect", "blocked-import@1:1", ""},
		{"pydoc.locate", "from pydoc import locate", "blocked-import@1:1", ""},
		{"pkgutil.resolve_name", "import pkgutil", "blocked-import@1:1", ""},
		{"timeit runs a string", "import timeit", "blocked-import@1:1", ""},
		{"code's interpreter", "import code\ncode.InteractiveInterpreter().runsource(\"1\")", "evasion-member@2:1", ""},
		{"numpy's ctypeslib", "from numpy.ctypeslib import load_library", "evasion-member@1:1", ""},
		{"asyncio's subprocesses", "import asyncio\nasyncio.create_subprocess_exec(\"/bin/true\")", "evasion-member@2:1", ""},
		{"an event loop's subprocesses", "import asyncio\nasyncio.new_event_loop().subprocess_shell", "evasion-attribute@2:1", ""},
		// What analysts write stays allowed.
		{"a class's name", "class A: pass\nprint(A().__class__.__name__, type(A()).__name__, A.__doc__)", "", sandbox.StatusOK},
		{"getattr with a literal name and a default", "import math\ngetattr(math, 'tau', None)", "", sandbox.StatusOK},
		{"hasattr with a computed name", "import math\nhasattr(math, 't' + 'au')", "", sandbox.StatusOK},
		{"itemgetter and a dotted attrgetter", "import operator\noperator.itemgetter('a')({'a': 1})\noperator.attrgetter('real.imag')(1)", "", sandbox.StatusOK},
		{"a key named os", "x = {'os': 1}\nx['os']", "", sandbox.StatusOK},
		{"an exception's code and args", "try:\n    raise SystemExit(3)\nexcept SystemExit as e:\n    print(e.code, e.args)", "", sandbox.StatusOK},
		{"dunder methods defined", "class A:\n    def __init__(self):\n        self.x = 1\n    def __repr__(self):\n        return 'A'\nprint(A())", "", sandbox.StatusOK},
		{"tempfile and pathlib", "import tempfile, pathlib\npathlib.Path(tempfile.mkdtemp()).exists()", "", sandbox.StatusOK},
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
