package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestRunPolicyEvasions drives each way around the Python policy the
// second red team and its review found (issue 23) through `crucible run`
// on the real sandbox (on the host's directories, or in the datascience
// image for an alias only its libraries hold), twice: with no policy the program reaches os (or
// runs a process) and prints "reached", which proves the attack is real;
// under --policy block it is blocked with the rule expected and nothing
// ran (no output, no file from its first line).
func TestRunPolicyEvasions(t *testing.T) {
	testenv.Root(t)
	const first = "open('ran.txt', 'w').write('x')\n"
	cases := []struct{ name, code, rule, image string }{
		{"issue's __self__", `m = getattr(print.__self__, "_"+"_import__")("os")` + "\nprint('reached', m.getpid())", "evasion-attribute", ""},
		{"__self__ by a computed name", `m = getattr(getattr(print, "__se"+"lf__"), "_"+"_import__")("os")` + "\nprint('reached', m.getpid())", "evasion-getattr", ""},
		{"getattr passed to reduce", `import functools` + "\n" + `m = functools.reduce(getattr, ["__se"+"lf__", "_"+"_import__"], print)("os")` + "\nprint('reached', m.getpid())", "evasion-getattr", ""},
		{"attrgetter of a computed name", `import operator` + "\n" + `m = operator.attrgetter("__se"+"lf__._"+"_import__")(print)("os")` + "\nprint('reached', m.getpid())", "evasion-getattr", ""},
		{"string.Formatter's fields", `import string` + "\n" + `m = string.Formatter().get_field("0.__se"+"lf__._"+"_import__", [print], {})[0]("os")` + "\nprint('reached', m.getpid())", "evasion-member", ""},
		{"a module's __dict__", `import tempfile` + "\n" + `print('reached', tempfile.__dict__["_o"+"s"].getpid())`, "evasion-attribute", ""},
		{"os under a private alias", "import tempfile\nprint('reached', tempfile._os.getpid())", "blocked-import", ""},
		{"os imported from another module", "from tempfile import _os\nprint('reached', _os.getpid())", "blocked-import", ""},
		{"sys.modules by a private alias", `import tempfile` + "\n" + `print('reached', tempfile._sys.modules["o"+"s"].getpid())`, "evasion-member", ""},
		{"enum's alias of builtins", `import enum` + "\n" + `enum.bltns.exec("import o"+"s as m; print('reached', m.getpid())")`, "evasion-attribute", ""},
		{"a generator's code rebuilt", "def g():\n    yield XX('os')\n" + `c = g().gi_code.replace(co_names=("_"+"_import__",))` + "\nm = next(type(g)(c, {})())\nprint('reached', m.getpid())", "evasion-attribute", ""},
		{"inspect.getmembers", `import inspect` + "\n" + `b = dict(inspect.getmembers(print))["__se"+"lf__"]` + "\n" + `m = dict(inspect.getmembers(b))["_"+"_import__"]("os")` + "\nprint('reached', m.getpid())", "blocked-import", ""},
		{"pydoc.locate", `import pydoc` + "\n" + `print('reached', pydoc.locate("o"+"s").getpid())`, "blocked-import", ""},
		{"pkgutil.resolve_name", `import pkgutil` + "\n" + `print('reached', pkgutil.resolve_name("o"+"s").getpid())`, "blocked-import", ""},
		{"code's interpreter", `import code` + "\n" + `code.InteractiveInterpreter().runsource("import o"+"s as m; print('reached', m.getpid())")`, "evasion-member", ""},
		{"asyncio's subprocess", "import asyncio\nasync def main():\n    p = await asyncio.create_subprocess_exec('/bin/true')\n    print('reached', await p.wait())\nasyncio.run(main())", "evasion-member", ""},
		{"concurrent.futures' alias of multiprocessing", "import concurrent.futures.process as p\n" + `p.mp.reduction.ForkingPickler.loads(b"cposix\nsystem\n(S'echo reached'\ntR.")`, "evasion-attribute", ""},
		{"pandas' alias of pickle", "import pandas.compat.pickle_compat as pc\n" + `pc.pkl.loads(b"cposix\nsystem\n(S'echo reached'\ntR.")`, "evasion-attribute", "datascience"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"run", "--timeout", "60s"}
			if tc.image != "" {
				testenv.Image(t, "datascience")
				args = append(args, "--image", tc.image, "--memory", "1GiB")
			}
			out := t.TempDir()
			stdout, stderr, code := cli{}.run(t, append(args, "--out", out, "-c", first+tc.code)...)
			if code != 0 || !strings.HasPrefix(stdout, "reached") {
				t.Errorf("with no policy: exit %d stdout %q, want the attack to reach its target; stderr:\n%s", code, stdout, stderr)
			}
			out = t.TempDir()
			stdout, stderr, code = cli{}.run(t, append(args, "--out", out, "--policy", "block", "-c", first+tc.code)...)
			if code != exitBlocked || stdout != "" || !strings.Contains(stderr, ": "+tc.rule+": ") || !strings.Contains(stderr, "nothing ran") {
				t.Errorf("--policy block: exit %d stdout %q, want %d, no output and a %s finding; stderr:\n%s", code, stdout, exitBlocked, tc.rule, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "ran.txt")); err == nil {
				t.Errorf("--policy block: ran.txt saved: the program ran")
			}
		})
	}
}

// analysisProgram is what an analyst writes: pandas, matplotlib, a class's
// name, getattr with a literal, hasattr with a computed name, an
// exception's code. The stricter policy of issue 23 must leave it alone.
const analysisProgram = `import json, sys, pathlib, tempfile, operator
import pandas as pd
import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
df = pd.DataFrame({"city": ["a", "b", "a"], "sales": [1.0, 2.5, 3.0]})
by = df.groupby("city")["sales"].agg(["mean", "sum"]).reset_index()
for stat in ["mean", "sum"]:
    assert hasattr(by, "c" + "olumns") and stat in by.columns
print(df.__class__.__name__, type(by).__name__, getattr(df, "shape", None), np.float64(by["sum"].max()))
print(sorted(map(operator.itemgetter("city"), df.to_dict("records"))))
fig, ax = plt.subplots()
by.plot.bar(x="city", y="sum", ax=ax)
fig.savefig("chart.png")
pathlib.Path("summary.json").write_text(json.dumps(by.to_dict("records")))
try:
    sys.exit(3)
except SystemExit as e:
    print("exit code", e.code, len(sys.argv), pathlib.Path(tempfile.gettempdir()).is_dir())
`

// TestRunPolicyAllowsAnalysis runs analysisProgram in the datascience
// image under --policy block: no finding, it runs and writes its chart.
func TestRunPolicyAllowsAnalysis(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	out := t.TempDir()
	// pandas and matplotlib load for seconds on a loaded machine: a wall
	// limit well over the default 5 s.
	stdout, stderr, code := cli{}.run(t, "run", "--image", "datascience", "--timeout", "60s", "--memory", "1GiB",
		"--out", out, "--policy", "block", "-c", analysisProgram)
	want := "DataFrame DataFrame (3, 2) 4.0\n['a', 'a', 'b']\nexit code 3 1 True\n"
	if code != 0 || stdout != want || strings.Contains(stderr, "(strict): line") {
		t.Errorf("exit %d stdout %q, want 0 %q and no finding; stderr:\n%s", code, stdout, want, stderr)
	}
	for _, f := range []string{"chart.png", "summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s not saved: %v; stderr:\n%s", f, err, stderr)
		}
	}
}
