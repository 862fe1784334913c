package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// runCell puts code in cell i (0-based) of the notebook, runs it with
// Shift+Enter as a user would, and waits until it ended.
func (p *browserPage) runCell(i int, code string) {
	p.t.Helper()
	p.cell(i)
	sel := `document.querySelectorAll('.cell textarea')[` + strconv.Itoa(i) + `]`
	eval[chromedp.Void](p, `(() => { const ta = `+sel+`; ta.value = `+js(code)+`; ta.dispatchEvent(new Event('input')); ta.focus(); })()`)
	p.do("Shift+Enter in cell "+strconv.Itoa(i), chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)))
	p.waitFor("cell "+strconv.Itoa(i)+" to end", `!['running', 'queued', 'idle'].includes(document.querySelectorAll('.cell')[`+strconv.Itoa(i)+`].dataset.state)`)
}

// cell makes sure the notebook has cell i (0-based), adding cells with
// the "Add cell" button as needed, and returns the JavaScript expression of
// its element.
func (p *browserPage) cell(i int) string {
	p.t.Helper()
	p.waitFor("the cells", `document.querySelector('.cell')`)
	for eval[int](p, `document.querySelectorAll('.cell').length`) <= i {
		p.do("add a cell", chromedp.Click(chromedp.CSS(`.add-cell`)))
	}
	return `document.querySelectorAll('.cell')[` + strconv.Itoa(i) + `]`
}

// cellText is the text a cell's output part sel shows.
func (p *browserPage) cellText(i int, sel string) string {
	p.t.Helper()
	return eval[string](p, `Array.from(document.querySelectorAll('.cell')[`+strconv.Itoa(i)+`].querySelectorAll(`+js(sel)+`)).map(e => e.textContent).join('\n')`)
}

// TestUINotebook drives the Notebook view in Chromium against `crucible
// serve`: a session opened from the page; a cell's output streamed while
// it runs (it waits for a file the test writes); an error with its line
// marked; an interrupted cell and the session kept; a DataFrame as a
// table and a matplotlib figure (in the datascience image); display() of
// a table, a figure and an object, and a "!" line;
// hostile output shown as text, with nothing executed; a file uploaded,
// read by a cell, and one the cell wrote downloaded; the session reopened
// from its history after a reload. It reports the first render's time.
func TestUINotebook(t *testing.T) {
	crucibleBinary(t)
	testenv.Image(t, "datascience")
	p := newBrowserPage(t)
	srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"), "--image", "datascience", "--image", "host")

	p.do("open the UI", chromedp.Navigate(srv.URL+"/#/notebook"))
	p.waitFor("the session form", `document.querySelector('#nb-image option')`)
	reportFirstRender(p)
	p.do("new session", chromedp.Click(chromedp.CSS(`form[aria-label="New session"] button`)))
	p.waitFor("the notebook", `location.hash.startsWith('#/notebook/ses') && document.querySelector('.cell textarea')`)
	sid := strings.TrimPrefix(eval[string](p, `location.hash`), "#/notebook/")

	p.runCell(0, `print("hello from the notebook")`+"\n"+`21 * 2`)
	if got := p.cellText(0, ".stdout"); got != "hello from the notebook\n" {
		t.Errorf("cell 0 stdout %q", got)
	}
	if got := p.cellText(0, ".value"); got != "42" {
		t.Errorf("cell 0 value %q, want 42", got)
	}

	// Live output: the cell prints, then waits for a file only the test
	// writes once the page shows the line.
	sel := p.cell(1)
	eval[chromedp.Void](p, `(() => { const ta = `+sel+`.querySelector('textarea'); ta.value = `+js("import os, time\nprint('waiting for go', flush=True)\nwhile not os.path.exists('go'):\n    time.sleep(0.02)\nprint('got go')")+`; ta.dispatchEvent(new Event('input')); })()`)
	p.do("run cell 1", chromedp.Click(chromedp.CSS(`.cell:nth-child(2) .cell-head button`)))
	p.waitFor("the streamed line", sel+`.dataset.state === 'running' && `+sel+`.querySelector('.stdout').textContent === 'waiting for go\n'`)
	if r := srv.do(t, "PUT", "/v1/sessions/"+sid+"/files/go", "", strings.NewReader("")); r.Status != 204 {
		t.Fatalf("PUT go: %d %s", r.Status, r.Body)
	}
	p.waitFor("the cell's end", sel+`.dataset.state === 'ok' && `+sel+`.querySelector('.stdout').textContent === 'waiting for go\ngot go\n'`)

	// An error: its line marked in the gutter and in the excerpt.
	p.runCell(2, "x = 1\ny = undefined_name + x\nprint(y)")
	if got := p.cellText(2, ".gutter .error-line"); got != "2" {
		t.Errorf("gutter error line %q, want 2", got)
	}
	if got := p.cellText(2, ".error-box .error-title"); !strings.Contains(got, "NameError") || !strings.Contains(got, "line 2") {
		t.Errorf("error title %q, want NameError on line 2", got)
	}
	if got := p.cellText(2, ".error-box li.error-line"); !strings.Contains(got, "y = undefined_name + x") {
		t.Errorf("error excerpt's marked line %q", got)
	}

	// Interrupt: a cell that would sleep ten minutes, stopped once it
	// printed; the session keeps its variables.
	sel = p.cell(3)
	eval[chromedp.Void](p, `(() => { const ta = `+sel+`.querySelector('textarea'); ta.value = `+js("import time\nprint('sleeping', flush=True)\ntime.sleep(600)")+`; ta.dispatchEvent(new Event('input')); })()`)
	p.do("run cell 3", chromedp.Click(chromedp.CSS(`.cell:nth-child(4) .cell-head button`)))
	p.waitFor("cell 3 sleeping", sel+`.querySelector('.stdout').textContent === 'sleeping\n'`)
	p.do("interrupt", chromedp.Click(chromedp.CSS(`.toolbar .interrupt`)))
	p.waitFor("cell 3 interrupted", sel+`.dataset.state === 'interrupted' && /killed/.test(`+sel+`.querySelector('.cell-status').textContent)`)
	t.Logf("interrupted cell: %q", p.cellText(3, ".cell-status"))
	p.runCell(4, "print(x + 41)")
	if got := p.cellText(4, ".stdout"); got != "42\n" {
		t.Errorf("after the interrupt, the session's x + 41 printed %q, want 42", got)
	}

	next := 5
	p.runCell(next, "import pandas as pd\ndf = pd.DataFrame({'city': ['Oslo', 'Lima', 'Pune'], 'temp_c': [3.5, 19.0, 27.25]})\ndf")
	if got := p.cellText(next, ".table-wrap td"); !strings.Contains(got, "Oslo") || !strings.Contains(got, "27.25") {
		t.Errorf("DataFrame table cells %q", got)
	}
	next++
	p.runCell(next, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(4, 2.5))\nax.bar(df['city'], df['temp_c'], color='#0b57d0')\nax.set_ylabel('°C')\nfig.tight_layout()")
	p.waitFor("the figure loaded", `(() => { const img = document.querySelectorAll('.cell')[`+strconv.Itoa(next)+`].querySelector('.figure img'); return img && img.complete && img.naturalWidth > 0 && img.src.startsWith('blob:'); })()`)
	next++

	// Notebook habits: display() of a table, a figure and an object whose
	// HTML is no table (shown as its text, nothing of its markup in the
	// page), in order, and a "!" line's output.
	p.runCell(next, "display(df)\ndisplay(fig)\nclass Page:\n"+
		"    def _repr_html_(self):\n        return '<p onclick=\"window.__pwned=9\">page</p><img src=x onerror=\"window.__pwned=10\">'\n"+
		"    def __repr__(self):\n        return 'Page()'\ndisplay(Page())\n!echo shell says hi")
	result := `document.querySelectorAll('.cell')[` + strconv.Itoa(next) + `].querySelector('.result')`
	p.waitFor("the displayed figure loaded", `(() => { const img = `+result+`.querySelector('.figure img'); return img && img.complete && img.naturalWidth > 0; })()`)
	if got := eval[[]string](p, `Array.from(`+result+`.children).map(e => e.className)`); strings.Join(got, ",") != "table-wrap,figure,output display" {
		t.Errorf("the displays' elements in order: %q, want the table, the figure, the text", got)
	}
	if got := p.cellText(next, ".result .table-wrap td"); !strings.Contains(got, "Lima") {
		t.Errorf("display(df)'s table cells %q", got)
	}
	if got := p.cellText(next, ".result pre.display"); got != "Page()" {
		t.Errorf("display(Page()) shows %q, want its text Page()", got)
	}
	if got := p.cellText(next, ".stdout"); got != "shell says hi\n" {
		t.Errorf("the shell line's output %q", got)
	}
	next++

	// Hostile output: markup in stdout, in a value's HTML, in a file name.
	hostile := "print('<img src=x onerror=\"window.__pwned=1;alert(1)\">')\n" +
		"print('<script>window.__pwned=2</script>')\n" +
		"open('<img src=x onerror=alert(3)>.txt', 'w').write('x')\n" +
		"class Evil:\n" +
		"    def _repr_html_(self):\n" +
		"        return ('<table><tr><td onclick=\"window.__pwned=4\" style=\"background:url(x)\">cell<img src=\"x\" onerror=\"window.__pwned=5\"/>'\n" +
		"                '<script>window.__pwned=6</script></td></tr></table><img src=\"x\" onerror=\"alert(7)\"/><iframe src=\"javascript:alert(8)\"></iframe>')\n" +
		"Evil()"
	p.runCell(next, hostile)
	p.waitFor("the files listed", `document.querySelector('.files .files-list').textContent.includes('.txt')`)
	if got := p.cellText(next, ".stdout"); !strings.Contains(got, `<img src=x onerror="window.__pwned=1;alert(1)">`) {
		t.Errorf("hostile stdout not shown as text: %q", got)
	}
	checks := map[string]string{
		"no script ran":                    `window.__pwned === undefined`,
		"the value's table has its text":   `document.querySelectorAll('.cell')[` + strconv.Itoa(next) + `].querySelector('.table-wrap td').textContent === 'cell'`,
		"no img, script or iframe from it": `document.querySelectorAll('.cell-output img:not(.figure img), .cell-output script, .cell-output iframe, .files img').length === 0`,
		"no attribute of the program's":    `Array.from(document.querySelectorAll('.table-wrap *')).every(e => !e.hasAttribute('onclick') && !e.hasAttribute('style'))`,
		"the file name shown as text":      `Array.from(document.querySelectorAll('.files .files-list button')).some(b => b.textContent === '<img src=x onerror=alert(3)>.txt')`,
	}
	for what, cond := range checks {
		if !eval[bool](p, cond) {
			t.Errorf("hostile output: %s: false (%s)", what, cond)
		}
	}
	next++

	// Files: upload one, read it in a cell, download what a cell wrote.
	upload := filepath.Join(t.TempDir(), "input.csv")
	if err := os.WriteFile(upload, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.do("upload", chromedp.SetUploadFiles(chromedp.ID("nb-upload"), []string{upload}))
	p.waitFor("the upload listed", `document.querySelector('.files-msg').textContent === 'Uploaded input.csv' && document.querySelector('.files .files-list').textContent.includes('input.csv')`)
	p.runCell(next, "data = open('input.csv').read()\nprint(data.splitlines()[1])\nopen('report.txt', 'w').write('rows: ' + str(len(data.splitlines()) - 1) + '\\n')")
	if got := p.cellText(next, ".stdout"); got != "1,2\n" {
		t.Errorf("the uploaded file, read in a cell: %q", got)
	}
	downloads := t.TempDir()
	p.allowDownloads(downloads)
	p.waitFor("report.txt listed", `Array.from(document.querySelectorAll('.files .files-list button')).some(b => b.textContent === 'report.txt')`)
	p.do("download report.txt", chromedp.Click(chromedp.CSS(`.files .files-list button[aria-label="Download report.txt"]`)))
	got := waitFile(t, filepath.Join(downloads, "report.txt"))
	if got != "rows: 1\n" {
		t.Errorf("downloaded report.txt: %q, want %q", got, "rows: 1\n")
	}
	p.do("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	p.screenshot("notebook")
	p.do("scroll to the table", chromedp.Evaluate[chromedp.Void](`document.querySelector('.table-wrap').scrollIntoView({block: 'center'})`))
	p.screenshot("notebook-dataframe")

	// Reopened after a reload: the cells come back from the session's runs.
	p.do("reload", chromedp.Reload())
	p.waitFor("the history", `Array.from(document.querySelectorAll('.cell .stdout')).some(e => e.textContent === 'hello from the notebook\n')`)
	reportFirstRender(p) // again, with the browser warm
	if n := eval[int](p, `document.querySelectorAll('.cell textarea').length`); n < next+1 {
		t.Errorf("the reopened notebook has %d cells, want at least %d (the cells run, then an empty one)", n, next+1)
	}
	p.do("sessions", chromedp.Navigate(srv.URL+"/#/notebook"))
	p.waitFor("the session listed", `Array.from(document.querySelectorAll('table.grid a')).some(a => a.textContent === `+js(sid)+`)`)
}

// reportFirstRender logs the page's timings: the navigation, the shell's
// render and the first answer of the API shown (they are reported, not
// asserted: timing depends on the machine).
func reportFirstRender(p *browserPage) {
	p.t.Helper()
	p.waitFor("the view's first answer", `performance.getEntriesByName('crucible:view-ready').length > 0`)
	m := eval[map[string]float64](p, `(() => {
		const nav = performance.getEntriesByType('navigation')[0];
		const mark = (n) => performance.getEntriesByName(n)[0].startTime;
		return {dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, render: mark('crucible:first-render'), ready: mark('crucible:view-ready')};
	})()`)
	p.t.Logf("first render (Performance API, ms since navigation): shell rendered %.1f, DOMContentLoaded %.1f, first API answer shown %.1f, load %.1f",
		m["render"], m["dcl"], m["ready"], m["load"])
}

// waitFile waits for a downloaded file to be complete and returns it.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(uiStepTimeout)
	for {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(filepath.Dir(path))
			t.Fatalf("%s not downloaded (the directory holds %v)", path, entries)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
