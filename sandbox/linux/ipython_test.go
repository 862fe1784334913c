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

// The Python kernel's stand-in for IPython.display (kernel/python_ipython.py),
// which code written for Jupyter imports and which no image installs.

// ipythonForms are the ways code written for Jupyter reaches IPython's
// display; each program shows HTML("<b>x</b>") once.
var ipythonForms = []struct{ name, code string }{
	{"from IPython.display import", "from IPython.display import display, HTML, Markdown, Image, JSON, SVG, clear_output\ndisplay(HTML('<b>x</b>'))"},
	{"from IPython import display", "from IPython import display\ndisplay.display(display.HTML('<b>x</b>'))"},
	{"import IPython", "import IPython\nIPython.display.display(IPython.display.HTML('<b>x</b>'))"},
	{"import IPython.display", "import IPython.display\nIPython.display.display(IPython.display.HTML('<b>x</b>'))"},
	{"from IPython.core.display import", "from IPython.core.display import display, HTML\ndisplay(HTML('<b>x</b>'))"},
	{"star import", "from IPython.display import *\ndisplay(HTML('<b>x</b>'))"},
	{"display_html raw", "from IPython.display import display_html\ndisplay_html('<b>x</b>', raw=True)"},
	{"builtin display of the stand-in's HTML", "from IPython.display import HTML\ndisplay(HTML('<b>x</b>'))"},
}

// TestIPythonImportForms proves each import form works, from a fresh
// interpreter each time, in a session cell (an HTML display) and in a
// stateless run (the HTML printed as the text form), in the default
// image and in the data-science image, neither of which has IPython.
func TestIPythonImportForms(t *testing.T) {
	images := []struct {
		name string
		opts func(t *testing.T) linux.Options
	}{
		{"default", func(*testing.T) linux.Options { return linux.Options{} }},
		{"datascience", func(t *testing.T) linux.Options { return imageOptions(testenv.Image(t, "datascience")) }},
	}
	for _, img := range images {
		t.Run(img.name, func(t *testing.T) {
			rt := newRuntime(t, img.opts(t))
			for _, form := range ipythonForms {
				t.Run(form.name, func(t *testing.T) {
					s := newSession(t, rt, sandbox.Limits{WallTimeMS: 30_000})
					res := execCode(t, s, form.code)
					wantOK(t, res)
					if len(res.Displays) != 1 || res.Displays[0].MIME != "text/html" || string(res.Displays[0].Data) != "<b>x</b>" {
						t.Errorf("session: displays %+v, want one text/html <b>x</b> (%s)", res.Displays, describe(res))
					}
					res = runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: form.code, Limits: sandbox.Limits{WallTimeMS: 30_000}})
					if res.Status != sandbox.StatusOK || string(res.Stdout) != "<b>x</b>\n" {
						t.Errorf("stateless: %s; want stdout <b>x</b>", describe(res))
					}
				})
			}
		})
	}
}

// onePixelPNG is a 1x1 PNG.
const onePixelPNG = `bytes.fromhex('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489'
                   '0000000d49444154789c63f8cfc0f01f00050001ff89993d1d0000000049454e44ae426082')`

// TestIPythonDisplayKinds proves, in a session cell of the data-science
// image, what each of the stand-in's objects shows as: HTML as HTML, an
// Image from bytes, a file name, a path or a pathlib.Path as a PNG,
// Markdown, JSON and SVG as such, Latex and Javascript as their text; a
// DataFrame through IPython.display.display exactly as the kernel's own
// display shows it; a PIL image's show() as a PNG (PIL shows through
// IPython.display when it can import it); get_ipython() is None; and
// clear_output() forgets the displays the cell showed before it.
func TestIPythonDisplayKinds(t *testing.T) {
	img := testenv.Image(t, "datascience")
	s := newSession(t, newRuntime(t, imageOptions(img)), sandbox.Limits{WallTimeMS: 60_000})
	res := execCode(t, s, `import pathlib
from IPython.display import display, HTML, Markdown, Image, JSON, SVG, Latex, Javascript
png = `+onePixelPNG+`
open('dot.png', 'wb').write(png)
display(HTML('<b>x</b>'), Image(data=png), Image(filename='dot.png'), Image('dot.png'), Image(pathlib.Path('dot.png')))
display(Markdown('# title'), JSON({'a': [1, 2]}), JSON('[3]'), SVG('<svg xmlns="http://www.w3.org/2000/svg"/>'))
display(Latex('$x^2$'), Javascript('alert(1)'))`)
	wantOK(t, res)
	want := []struct{ mime, data, text string }{
		{"text/html", "<b>x</b>", "<b>x</b>"},
		{"image/png", "", "<IPython.core.display.Image object: png, 70 bytes>"},
		{"image/png", "", "<IPython.core.display.Image object: png, 70 bytes>"},
		{"image/png", "", "<IPython.core.display.Image object: png, 70 bytes>"},
		{"image/png", "", "<IPython.core.display.Image object: png, 70 bytes>"},
		{"text/markdown", "# title", "# title"},
		{"application/json", `{"a":[1,2]}`, "{'a': [1, 2]}"},
		{"application/json", `[3]`, "[3]"},
		{"image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"/>`, `<svg xmlns="http://www.w3.org/2000/svg"/>`},
		{"text/plain", "", "$x^2$"},
		{"text/plain", "", "alert(1)"},
	}
	if len(res.Displays) != len(want) {
		t.Fatalf("%d displays %+v, want %d", len(res.Displays), res.Displays, len(want))
	}
	for i, w := range want {
		d := res.Displays[i]
		if d.MIME != w.mime || d.Text != w.text || d.Omitted != "" {
			t.Errorf("display %d: %s %q (omitted %q), want %s %q", i, d.MIME, d.Text, d.Omitted, w.mime, w.text)
		}
		if w.mime == "image/png" {
			if _, err := png.Decode(bytes.NewReader(d.Data)); err != nil {
				t.Errorf("display %d is not a PNG: %v", i, err)
			}
		} else if string(d.Data) != w.data {
			t.Errorf("display %d: data %q, want %q", i, d.Data, w.data)
		}
	}

	res = execCode(t, s, `import pandas as pd, IPython
from PIL import Image as PILImage
df = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})
display(df)
IPython.display.display(df)
PILImage.new('RGB', (3, 3), 'red').show()
IPython.get_ipython() is None`)
	wantOK(t, res)
	if res.Value != "True" {
		t.Errorf("get_ipython() is None: %s, want True", res.Value)
	}
	if len(res.Displays) != 3 {
		t.Fatalf("%d displays %+v, want the DataFrame twice and the PIL image", len(res.Displays), res.Displays)
	}
	own, through := res.Displays[0], res.Displays[1]
	if own.MIME != "text/html" || !bytes.Contains(own.Data, []byte("<table")) || through.MIME != own.MIME ||
		!bytes.Equal(through.Data, own.Data) || through.Text != own.Text {
		t.Errorf("a DataFrame through IPython.display: %s %q; the kernel's display: %s %q; want the same table", through.MIME, clipped(through.Data), own.MIME, clipped(own.Data))
	}
	if d := res.Displays[2]; d.MIME != "image/png" {
		t.Errorf("PIL's show(): %s %q, want image/png", d.MIME, d.Text)
	}

	res = execCode(t, s, `from IPython.display import display, clear_output
display(1)
print('printed')
clear_output()
clear_output(wait=True)
display(2)`)
	wantOK(t, res)
	if len(res.Displays) != 1 || res.Displays[0].Text != "2" || string(res.Stdout) != "printed\n" {
		t.Errorf("after clear_output: displays %+v, stdout %q; want only 2 and the printed line", res.Displays, res.Stdout)
	}
}

// TestIPythonStatelessImages proves, on every path a stateless run takes
// (a sandbox built for it, a prestarted one, a single-run warm
// interpreter, a zygote slot's fork), that the stand-in imports and its
// images become files of the run, as the kernel's display writes a
// figure: a PNG from a file, a JPEG from its bytes, an SVG.
func TestIPythonStatelessImages(t *testing.T) {
	img := testenv.Image(t, "datascience")
	const program = `import io
from PIL import Image as PILImage
from IPython.display import display, Image, SVG
open('dot.png', 'wb').write(` + onePixelPNG + `)
jpeg = io.BytesIO()
PILImage.new('RGB', (4, 4), 'red').save(jpeg, 'JPEG')
display(Image(filename='dot.png'), Image(data=jpeg.getvalue()), SVG('<svg xmlns="http://www.w3.org/2000/svg"/>'))`
	paths := []struct {
		name string
		warm bool
		opts func(linux.Options) linux.Options
	}{
		{"cold", false, func(o linux.Options) linux.Options { return o }},
		{"prestart", false, func(o linux.Options) linux.Options { o.Prestart = 1; return o }},
		{"single-run warm", true, func(o linux.Options) linux.Options { o.Warm, o.SingleRunWarm = 1, true; return o }},
		{"zygote", true, func(o linux.Options) linux.Options { o.Warm = 1; return o }},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			rt := newRuntime(t, p.opts(imageOptions(img)))
			if p.warm {
				awaitWarm(t, rt)
			}
			before := rt.WarmStats().Hits
			res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: program, Limits: sandbox.Limits{WallTimeMS: 30_000}})
			if res.Status != sandbox.StatusOK {
				t.Fatalf("run: %s", describe(res))
			}
			if served := rt.WarmStats().Hits > before; served != p.warm {
				t.Errorf("served warm: %v, on path %s", served, p.name)
			}
			var names []string
			for _, a := range res.Artifacts {
				names = append(names, a.Name)
				if a.Name == "figure-1.jpg" && !bytes.HasPrefix(a.Content, []byte("\xff\xd8")) {
					t.Errorf("figure-1.jpg is not a JPEG: %q", a.Content[:min(8, len(a.Content))])
				}
			}
			want := []string{"dot.png", "figure-1.jpg", "figure-1.png", "figure-1.svg"}
			if !slices.Equal(names, want) {
				t.Errorf("artifacts %v, want %v (%s)", names, want, describe(res))
			}
			if !strings.Contains(string(res.Stdout), "<IPython.core.display.Image object: jpeg, ") {
				t.Errorf("stdout %q, want the JPEG's text form", res.Stdout)
			}
		})
	}
}

// fakeIPython writes a package IPython to /work, which is on the
// interpreter's sys.path before the image's packages, as an installed
// IPython would be found.
const fakeIPython = `import os
os.makedirs('IPython', exist_ok=True)
open('IPython/__init__.py', 'w').write('MARK = "real"\n')
open('IPython/display.py', 'w').write('def HTML(s):\n    return "real HTML " + s\n')
`

// TestIPythonRealOneWins proves the stand-in is only a fallback: an
// IPython the interpreter can import, here a package in the working
// directory, is the one imported, in a session and in a stateless run.
func TestIPythonRealOneWins(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	const use = "import IPython\nfrom IPython.display import HTML\nprint(IPython.MARK, HTML('x'))\n"
	s := newSession(t, rt, sandbox.Limits{})
	wantOK(t, execCode(t, s, fakeIPython))
	res := execCode(t, s, use)
	wantOK(t, res)
	if string(res.Stdout) != "real real HTML x\n" {
		t.Errorf("session: %s; want the package in /work imported", describe(res))
	}
	res = runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: fakeIPython + use})
	if res.Status != sandbox.StatusOK || string(res.Stdout) != "real real HTML x\n" {
		t.Errorf("stateless: %s; want the package in /work imported", describe(res))
	}
}

// TestIPythonUnderPolicy proves the strict code policy lets code import
// and use IPython.display as it lets any harmless module, and that the
// stand-in's modules hold no module among their names (nothing a
// program could reach through them that it could not import itself).
func TestIPythonUnderPolicy(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	rules := codecheck.Strict().Rules(sandbox.PolicyBlock)
	for _, code := range []string{
		"from IPython.display import display, HTML\ndisplay(HTML('<b>x</b>'))",
		"import IPython\nIPython.display.display(IPython.display.Markdown('x'))",
	} {
		res := execCell(t, s, sandbox.Cell{Code: code, Rules: rules})
		if res.Status != sandbox.StatusOK || len(res.Findings) != 0 || len(res.Displays) != 1 {
			t.Errorf("%q under the strict policy: %s, findings %+v; want it run with no finding", code, describe(res), res.Findings)
		}
	}
	res := execCode(t, s, `import types, IPython, IPython.display, IPython.core.display
sorted('%s.%s' % (m.__name__, k) for m in (IPython, IPython.display, IPython.core, IPython.core.display)
       for k, v in vars(m).items() if isinstance(v, types.ModuleType) and not v.__name__.startswith('IPython.'))`)
	if res.Value != "[]" {
		t.Errorf("modules held by the stand-in: %s; want none but its own", describe(res))
	}
}
