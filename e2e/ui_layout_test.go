package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// clippedJS is a JavaScript function that lists the elements sel matches
// whose content is clipped: taller (scrollHeight) or, unless
// verticalOnly, wider (scrollWidth) than the box that shows it (client
// size), by more than a pixel of rounding.
const clippedJS = `((sel, verticalOnly) => Array.from(document.querySelectorAll(sel)).filter(e =>
	e.scrollHeight > e.clientHeight + 1 || (!verticalOnly && e.scrollWidth > e.clientWidth + 1)).map(e =>
	(e.getAttribute('aria-label') || e.className || e.tagName) + ': ' + e.scrollWidth + 'x' + e.scrollHeight + ' in ' + e.clientWidth + 'x' + e.clientHeight))`

// brokenWordsJS is a JavaScript function that lists the words of the
// text of the elements sel matches that the layout broke across lines:
// a word laid out on one line has one client rectangle.
const brokenWordsJS = `(sel => {
	const broken = [];
	for (const e of document.querySelectorAll(sel)) {
		const walker = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
		for (let n = walker.nextNode(); n; n = walker.nextNode()) {
			for (const m of n.data.matchAll(/\S+/g)) {
				const r = document.createRange();
				r.setStart(n, m.index);
				r.setEnd(n, m.index + m[0].length);
				const lines = new Set(Array.from(r.getClientRects()).filter(x => x.width > 0).map(x => Math.round(x.top)));
				if (lines.size > 1) broken.push(m[0] + ' (' + lines.size + ' lines)');
			}
		}
	}
	return broken;
})`

// TestUIProfileLayout: the analyst's profile of a table with a dozen
// columns (Titanic: long names, top values, warnings) in a window of
// 1360×900 shows every row of its columns table and of its first rows
// without a scroll box clipping them, the columns table fits its width,
// and no header (nor a column's name or type) is broken inside a word.
func TestUIProfileLayout(t *testing.T) {
	titanic := testenv.Dataset(t, "dabench/tables/titanic.csv")
	srv := analystServer(t, "")
	p := newBrowserPage(t)
	p.do("open the UI", chromedp.Navigate(srv.URL+"/#/analyses"))
	p.uploadAnalysis(titanic)
	profile := `.profile-table[data-table="titanic"]`
	p.waitFor("the profile's rows", `document.querySelectorAll('`+profile+` table.columns tbody tr').length === 12 && document.querySelector('`+profile+` .sample tbody tr')`)
	p.screenshot("analyst-profile-titanic")
	if clipped := eval[[]string](p, clippedJS+`(`+js(profile+` .table-wrap:not(.sample)`)+`, false)`); len(clipped) > 0 {
		t.Errorf("the columns table is clipped: %q", clipped)
	}
	// The first rows of a wide table may scroll sideways; all of them
	// show, one under the other, without a scroll box.
	if clipped := eval[[]string](p, clippedJS+`(`+js(profile+` .table-wrap.sample`)+`, true)`); len(clipped) > 0 {
		t.Errorf("the first rows are clipped: %q", clipped)
	}
	if broken := eval[[]string](p, brokenWordsJS+`(`+js(profile+` thead th`)+`)`); len(broken) > 0 {
		t.Errorf("headers broken inside a word: %q", broken)
	}
	// Nor the column names and types, which are short here.
	if broken := eval[[]string](p, brokenWordsJS+`(`+js(profile+` table.columns tbody th, `+profile+` table.columns tbody td:nth-child(2)`)+`)`); len(broken) > 0 {
		t.Errorf("column names or types broken inside a word: %q", broken)
	}
	if heads := p.text("document", profile+" table.columns thead th"); heads != "Column\nType\nMissing\nDistinct\nSummary\nTop values\nWarnings" {
		t.Errorf("the columns table's headers: %q", heads)
	}
}

// TestUIRunsLayout: the Run history in a window of 1360×900 (and 1280,
// 1220 and 1000 wide) shows every column of its list whole (no scroll box,
// no cell cut), with a run from a session in it; a run that wrote nothing on standard
// error shows no error box for it, while one that did shows its stderr.
func TestUIRunsLayout(t *testing.T) {
	crucibleBinary(t)
	srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"))
	ctx := context.Background()
	quiet, err := srv.Client.CreateRun(ctx, sandbox.Request{Language: sandbox.Python, Code: "print('quiet')"})
	if err != nil {
		t.Fatal(err)
	}
	loud, err := srv.Client.CreateRun(ctx, sandbox.Request{Language: sandbox.Python, Code: "import sys\nprint('to stderr', file=sys.stderr)"})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := srv.Client.NewSession(ctx, sandbox.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Exec(ctx, sandbox.Cell{Code: "x = 1"}); err != nil {
		t.Fatal(err)
	}
	p := newBrowserPage(t)
	p.do("open a quiet run", chromedp.Navigate(srv.URL+"/#/runs/"+quiet.ID))
	p.waitFor("three runs and the run", `document.querySelectorAll('.runs-list tbody tr').length === 3 && document.querySelector('.run-detail h2')`)
	p.screenshot("runs-layout")
	if clipped := eval[[]string](p, clippedJS+`('.runs-list, .runs-list td, .runs-list th', false)`); len(clipped) > 0 {
		t.Errorf("the runs list clips: %q", clipped)
	}
	// Narrower windows: beside the run, then above it; the page itself
	// never scrolls sideways.
	for _, width := range []int64{1280, 1220, 1000} {
		p.do("resize", chromedp.EmulateViewport(width, 900))
		if clipped := eval[[]string](p, clippedJS+`('.runs-list, .runs-list td, .runs-list th', false)`); len(clipped) > 0 {
			t.Errorf("at %d px, the runs list clips: %q", width, clipped)
		}
		if w := eval[[]int](p, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`); w[0] > w[1] {
			t.Errorf("at %d px, the page is %d px wide in %d", width, w[0], w[1])
		}
	}
	p.do("resize", chromedp.EmulateViewport(1360, 900))
	if broken := eval[[]string](p, brokenWordsJS+`('.runs-list th, .runs-list td:nth-child(2), .runs-list td:nth-child(6)')`); len(broken) > 0 {
		t.Errorf("the runs list breaks inside a word: %q", broken)
	}
	// An empty stderr: said, not shown as an error.
	empty := eval[[]string](p, `Array.from(document.querySelectorAll('.run-detail .stderr, .run-detail .error-box')).map(e => e.className + ': ' + JSON.stringify(e.textContent))`)
	if len(empty) > 0 {
		t.Errorf("run %s wrote nothing on stderr, yet the page shows %q", quiet.ID, empty)
	}
	if got := p.text("document", ".run-detail .out-block"); !strings.Contains(got, "Standard error") || !strings.Contains(got, "quiet") {
		t.Errorf("the quiet run's output blocks: %q", got)
	}
	p.do("open the loud run", chromedp.Navigate(srv.URL+"/#/runs/"+loud.ID))
	p.waitFor("its stderr", `(document.querySelector('.run-detail pre.stderr') || {}).textContent === 'to stderr\n'`)
}
