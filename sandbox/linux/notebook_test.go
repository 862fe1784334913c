package linux_test

import (
	"bytes"
	"image/png"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy/codecheck"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The notebook habits of the Python kernel (kernel/python_notebook.py):
// display(), "!" and "%" lines in cells, and open figures returned at the
// end of a cell and of a stateless run on every path one takes.

// TestNotebookDisplays proves display() in a session cell: a DataFrame
// and a Series as HTML tables, a figure as a PNG (not returned again as
// an open figure), an object by its rich repr, a plain object by its
// repr, each with its text form, in the order shown; and the bounds: at
// most 50 displays and a notice, an HTML form over 512 KiB or a broken
// _repr_html_ falling back to the text.
func TestNotebookDisplays(t *testing.T) {
	img := testenv.Image(t, "datascience")
	// Importing pandas and matplotlib takes seconds on a loaded host.
	s := newSession(t, newRuntime(t, imageOptions(img)), sandbox.Limits{WallTimeMS: 60_000})
	res := execCode(t, s, `import pandas as pd, matplotlib.pyplot as plt
df = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})
display(df, df['a'])
fig, ax = plt.subplots()
ax.plot([1, 2, 3])
display(fig)
class Note:
    def _repr_markdown_(self):
        return '**note**'
display(Note(), 42)
print('after')`)
	wantOK(t, res)
	want := []string{"text/html", "text/html", "image/png", "text/markdown", "text/plain"}
	var got []string
	for _, d := range res.Displays {
		got = append(got, d.MIME)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("displays %v, want %v (%s)", got, want, describe(res))
	}
	for i := range 2 {
		d := res.Displays[i]
		if !bytes.Contains(d.Data, []byte("<table")) || !strings.Contains(d.Text, "1") || d.Omitted != "" {
			t.Errorf("display %d: data %q, text %q, omitted %q; want a table and the text form", i, clipped(d.Data), d.Text, d.Omitted)
		}
	}
	if _, err := png.Decode(bytes.NewReader(res.Displays[2].Data)); err != nil {
		t.Errorf("display 2 is not a PNG: %v", err)
	}
	if d := res.Displays[3]; string(d.Data) != "**note**" {
		t.Errorf("display 3: data %q, want **note**", d.Data)
	}
	if d := res.Displays[4]; d.Text != "42" || len(d.Data) != 0 {
		t.Errorf("display 4: text %q data %q, want 42 and no data", d.Text, d.Data)
	}
	if slices.ContainsFunc(res.Artifacts, func(a sandbox.Artifact) bool { return strings.HasPrefix(a.Name, "figure-") }) {
		t.Errorf("the displayed figure came back again as an artifact: %v", res.Artifacts)
	}
	if string(res.Stdout) != "after\n" {
		t.Errorf("stdout %q, want after", res.Stdout)
	}

	res = execCode(t, s, `class Huge:
    def _repr_html_(self):
        return '<b>' * (600 * 1024)
    def __repr__(self):
        return 'huge'
class Broken:
    def _repr_html_(self):
        raise RuntimeError('no')
    def __repr__(self):
        return 'broken'
display(Huge(), Broken())
for i in range(60):
    display(i)`)
	wantOK(t, res)
	if len(res.Displays) != sandbox.MaxDisplays {
		t.Fatalf("%d displays, want %d", len(res.Displays), sandbox.MaxDisplays)
	}
	for i, text := range []string{"huge", "broken"} {
		if d := res.Displays[i]; d.MIME != "text/plain" || d.Text != text {
			t.Errorf("display %d: %s %q, want text/plain %q", i, d.MIME, d.Text, text)
		}
	}
	if last := res.Displays[len(res.Displays)-1]; !strings.Contains(last.Text, "only the first 50") {
		t.Errorf("last display %q, want the notice that the rest was dropped", last.Text)
	}
}

// TestNotebookShellAndMagics proves "!" lines and the supported magics in
// cells, that a "!" or "%" inside a string is Python, that line numbers
// of errors are the cell's, and that an unsupported magic is an error
// naming it and what is supported, with nothing of the cell run.
func TestNotebookShellAndMagics(t *testing.T) {
	// %timeit runs for a second at least; more on a loaded host.
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{WallTimeMS: 60_000})
	for _, step := range []struct {
		name, code            string
		stdout, stderr, value string // stdout and stderr: substrings
	}{
		{"shell", "!echo hello; echo oops >&2", "hello\n", "oops", ""},
		{"shell in a block", "for i in range(2):\n    !echo line", "line\nline\n", "", ""},
		{"capture", "files = !printf 'a\\nb\\n'\nfiles", "", "", "['a', 'b']"},
		{"exit code", "!exit 3\n_exit_code", "", "", "3"},
		{"not a shell line", "s = '''\n!not shell\n'''\nt = ('%d' % 2,\n     '!x')\nprint(s.strip(), t)", "!not shell ('2', '!x')", "", ""},
		{"a line separator in a string", "s = 'a\u2028%b'\n!echo after\nlen(s)", "after\n", "", "4"},
		{"pwd", "%pwd", "", "", "'/work'"},
		{"ls", "open('data.csv', 'w').close()\n%ls", "data.csv", "", ""},
		{"time", "%time total = sum(range(10))\ntotal", "Wall time:", "", "45"},
		{"time value", "%time 6 * 7", "CPU times:", "", "42"},
		{"timeit", "%timeit 1 + 1", "per loop", "", ""},
		{"who", "%who", "files", "", ""},
		{"cell time", "%%time\nz = 1\nz + 1", "Wall time:", "", "2"},
		{"matplotlib inline", "%matplotlib inline\n1", "", "", "1"},
	} {
		t.Run(step.name, func(t *testing.T) {
			res := execCode(t, s, step.code)
			wantOK(t, res)
			if !strings.Contains(string(res.Stdout), step.stdout) || !strings.Contains(string(res.Stderr), step.stderr) || res.Value != step.value {
				t.Errorf("got %s; want stdout with %q, stderr with %q, value %q", describe(res), step.stdout, step.stderr, step.value)
			}
		})
	}

	res := execCode(t, s, "!echo first\n\nx = 1 / 0")
	if res.Status != sandbox.StatusError || res.Error == nil || res.Error.Type != "ZeroDivisionError" || res.Error.Line != 3 {
		t.Errorf("an error after a shell line: %s; want ZeroDivisionError at line 3", describe(res))
	}
	res = execCode(t, s, "%time 1 / 0")
	if res.Error == nil || res.Error.Line != 1 || res.Error.Type != "ZeroDivisionError" {
		t.Errorf("an error in %%time's statement: %s; want ZeroDivisionError at line 1", describe(res))
	}
	for _, magic := range []string{"%pip install requests", "print('ran')\n%load_ext autoreload", "%%bash\nls"} {
		res = execCode(t, s, magic)
		name := strings.Fields(magic[strings.Index(magic, "%"):])[0]
		if res.Status != sandbox.StatusError || res.Error == nil || res.Error.Type != "UsageError" ||
			!strings.Contains(res.Error.Message, name+" is not supported") || !strings.Contains(res.Error.Message, "%timeit") || len(res.Stdout) != 0 {
			t.Errorf("%q: %s; want a UsageError naming %s and the supported magics, nothing run", magic, describe(res), name)
		}
	}
}

// TestNotebookShellUnderPolicy proves the code policy sees what a cell's
// magics run: a "!" line where the policy blocks subprocess is a finding
// and the cell is blocked (nothing ran: the file the shell would write is
// not there), and %time's statement is checked as code.
func TestNotebookShellUnderPolicy(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	rules := codecheck.Strict().Rules(sandbox.PolicyBlock)
	for _, tc := range []struct{ code, rule string }{
		{"x = 1\n!touch shell-ran", "blocked-shell@2"},
		{"%ls", "blocked-shell@1"},
		{"files = !touch shell-ran", "blocked-shell@1"},
		{"%time import subprocess", "blocked-import@1"},
		{"%timeit __import__('os').system('touch shell-ran')", ""},
	} {
		res := execCell(t, s, sandbox.Cell{Code: tc.code, Rules: rules})
		if res.Status != sandbox.StatusBlocked {
			t.Errorf("%q: %s; want blocked", tc.code, describe(res))
			continue
		}
		var got []string
		for _, f := range res.Findings {
			got = append(got, f.Rule+"@"+string(rune('0'+f.Line)))
		}
		if tc.rule != "" && !slices.Contains(got, tc.rule) {
			t.Errorf("%q: findings %v, want %s", tc.code, got, tc.rule)
		}
	}
	res := execCode(t, s, "import os\nos.path.exists('shell-ran')")
	if res.Value != "False" {
		t.Errorf("a blocked cell's shell line ran: %s", describe(res))
	}
}

// TestStatelessOpenFigures proves that on every path a stateless Python
// run takes (a sandbox built for it, a prestarted one, a single-run warm
// interpreter, a zygote slot's fork), display() is a builtin that prints
// the text form, and the figures the program drew and never saved come
// back as PNG artifacts, once: a figure saved to a file and unchanged
// since is not returned again, one changed after its savefig is, one
// saved outside the working directory (/tmp, where no artifact shows it)
// is, and display(fig) writes the figure at once.
func TestStatelessOpenFigures(t *testing.T) {
	img := testenv.Image(t, "datascience")
	paths := []struct {
		name string
		opts func(linux.Options) linux.Options
	}{
		{"cold", func(o linux.Options) linux.Options { return o }},
		{"prestart", func(o linux.Options) linux.Options { o.Prestart = 1; return o }},
		{"single-run warm", func(o linux.Options) linux.Options { o.Warm, o.SingleRunWarm = 1, true; return o }},
		{"zygote", func(o linux.Options) linux.Options { o.Warm = 1; return o }},
	}
	const program = `import matplotlib.pyplot as plt, pandas as pd
display(pd.DataFrame({'a': [7]}))
saved, ax = plt.subplots()
ax.plot([1, 2])
saved.savefig('saved.png')
changed, ax2 = plt.subplots()
ax2.plot([3, 4])
changed.savefig('changed.png')
ax2.set_title('changed after saving')
shown = plt.figure()
shown.gca().bar([1], [2])
display(shown)
open_, ax3 = plt.subplots()
ax3.plot([5, 6])
elsewhere, ax4 = plt.subplots()
ax4.plot([7, 8])
plt.savefig('/tmp/elsewhere.png')  # pyplot's, which draws again after
`
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			rt := newRuntime(t, p.opts(imageOptions(img)))
			if p.name != "cold" && p.name != "prestart" {
				awaitWarm(t, rt)
			}
			before := rt.WarmStats().Hits
			// A cold start of pandas and matplotlib takes seconds on a loaded host.
			res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: program, Limits: sandbox.Limits{WallTimeMS: 60_000}})
			if res.Status != sandbox.StatusOK {
				t.Fatalf("run: %s", describe(res))
			}
			if served := rt.WarmStats().Hits > before; served != (p.name == "single-run warm" || p.name == "zygote") {
				t.Errorf("served warm: %v, on path %s", served, p.name)
			}
			if !strings.Contains(string(res.Stdout), "a\n0  7") {
				t.Errorf("stdout %q, want the DataFrame's text form", res.Stdout)
			}
			var names []string
			for _, a := range res.Artifacts {
				names = append(names, a.Name)
				if strings.HasSuffix(a.Name, ".png") {
					if _, err := png.Decode(bytes.NewReader(a.Content)); err != nil {
						t.Errorf("%s is not a PNG: %v", a.Name, err)
					}
				}
			}
			// figure-1: display(shown); then the open figures in order:
			// changed (figure-2), open_ (figure-3), elsewhere (figure-4);
			// saved is not stale.
			want := []string{"changed.png", "figure-1.png", "figure-2.png", "figure-3.png", "figure-4.png", "saved.png"}
			if !slices.Equal(names, want) {
				t.Errorf("artifacts %v, want %v (%s)", names, want, describe(res))
			}
		})
	}
}

// TestStatelessFigureBound proves a run's open figures are bounded: 20
// are returned, and stderr says the rest were not; and that a program
// that failed after drawing still gets its figure.
func TestStatelessFigureBound(t *testing.T) {
	rt := newRuntime(t, imageOptions(testenv.Image(t, "datascience")))
	res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: "import matplotlib.pyplot as plt\nfor i in range(25):\n    plt.figure(figsize=(1, 1)).gca().plot([i])", Limits: sandbox.Limits{WallTimeMS: 60_000}})
	if res.Status != sandbox.StatusOK || len(res.Artifacts) != 20 || !strings.Contains(string(res.Stderr), "only the first 20 open figures") {
		t.Errorf("%d artifacts, %s; want 20 figures and a notice", len(res.Artifacts), describe(res))
	}
	res = runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nraise ValueError('after drawing')", Limits: sandbox.Limits{WallTimeMS: 60_000}})
	if res.Status != sandbox.StatusError || res.Error == nil || res.Error.Line != 3 || len(res.Artifacts) != 1 || res.Artifacts[0].Name != "figure-1.png" {
		t.Errorf("a failed program's figure: %d artifacts, %s; want figure-1.png and the ValueError at line 3", len(res.Artifacts), describe(res))
	}
}
