package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// a11yAudit is a JavaScript expression whose value lists, one a line, what
// the page gets wrong for accessibility: form fields, buttons and links
// without an accessible name, images without alt, the document's lang,
// title, h1 and heading order, and visible text whose WCAG contrast ratio
// against its effective background is under 4.5:1 (3:1 for large text).
const a11yAudit = `(() => {
	const out = [];
	const visible = (el) => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) &&
		!el.closest('.sr-only, [hidden], dialog:not([open])');
	const desc = (el) => {
		let s = el.tagName.toLowerCase();
		if (el.id) s += '#' + el.id;
		else if (el.classList.length) s += '.' + Array.from(el.classList).join('.');
		const p = el.parentElement;
		if (!el.id && p && p !== document.body) s = desc(p) + ' > ' + s;
		return s;
	};
	const byIds = (ids) => (ids || '').split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean)
		.map((e) => e.textContent.trim()).join(' ').trim();
	const name = (el) => {
		const aria = (el.getAttribute('aria-label') || '').trim() || byIds(el.getAttribute('aria-labelledby'));
		if (aria) return aria;
		if (el.labels && el.labels.length) return Array.from(el.labels).map((l) => l.textContent.trim()).join(' ').trim();
		const text = (el.textContent || '').trim() || Array.from(el.querySelectorAll('img[alt]')).map((i) => i.alt).join(' ').trim();
		return text || (el.getAttribute('title') || '').trim();
	};

	if (!document.documentElement.lang) out.push('the document has no lang');
	if (!document.title.trim()) out.push('the document has no title');
	for (const el of document.querySelectorAll('input:not([type="hidden"]), select, textarea')) {
		const labelled = (el.getAttribute('aria-label') || '').trim() || byIds(el.getAttribute('aria-labelledby')) ||
			(el.labels && Array.from(el.labels).some((l) => l.textContent.trim()));
		if (!labelled) out.push('field without a label: ' + desc(el));
	}
	for (const el of document.querySelectorAll('button, a[href], summary, [role="button"]')) {
		if (!name(el)) out.push(el.tagName.toLowerCase() + ' without a name: ' + desc(el));
	}
	for (const el of document.querySelectorAll('img')) {
		if (!el.hasAttribute('alt')) out.push('image without alt: ' + desc(el));
	}
	const headings = Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6')).filter(visible);
	const h1s = headings.filter((h) => h.tagName === 'H1').length;
	if (h1s !== 1 && !(h1s === 0 && document.querySelector('main, [role="main"]'))) out.push(h1s + ' h1 headings');
	let level = 0;
	for (const h of headings) {
		const l = Number(h.tagName[1]);
		if (l > level + 1) out.push('heading skips from h' + level + ' to h' + l + ': ' + desc(h) + ' "' + h.textContent.trim().slice(0, 40) + '"');
		level = l;
	}

	const rgba = (s) => {
		const m = s.match(/rgba?\(([\d.]+),? ([\d.]+),? ([\d.]+)(?:[,/] ?([\d.]+))?\)/);
		if (!m) return null;
		return [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])];
	};
	const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
	const background = (el) => {
		const layers = [];
		for (let e = el; e; e = e.parentElement) {
			const c = rgba(getComputedStyle(e).backgroundColor);
			if (c && c[3] > 0) {
				layers.push(c);
				if (c[3] === 1) break;
			}
		}
		return layers.reduceRight((under, top) => over(top, under), [255, 255, 255, 1]);
	};
	const lum = (c) => {
		const [r, g, b] = c.slice(0, 3).map((v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
		return 0.2126 * r + 0.7152 * g + 0.0722 * b;
	};
	const hex = (c) => '#' + c.slice(0, 3).map((v) => Math.round(v).toString(16).padStart(2, '0')).join('');
	const seen = new Set();
	for (const el of document.body.querySelectorAll('*')) {
		const own = Array.from(el.childNodes).some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
		if (!own || !visible(el) || el.closest('[disabled], script, style, noscript')) continue;
		const r = el.getBoundingClientRect();
		if (r.width <= 1 || r.height <= 1) continue;
		const cs = getComputedStyle(el);
		const bg = background(el);
		const fg = over(rgba(cs.color), bg);
		const hi = Math.max(lum(fg), lum(bg)), lo = Math.min(lum(fg), lum(bg));
		const ratio = (hi + 0.05) / (lo + 0.05);
		const size = parseFloat(cs.fontSize), bold = Number(cs.fontWeight) >= 700;
		const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
		const key = desc(el) + hex(fg) + hex(bg);
		if (ratio < need && !seen.has(key)) {
			seen.add(key);
			out.push('contrast ' + ratio.toFixed(2) + ' < ' + need + ': ' + desc(el) + ' "' + el.textContent.trim().slice(0, 30) + '" ' + hex(fg) + ' on ' + hex(bg));
		}
	}
	return out.join('\n');
})()`

// a11yFocusStep is a JavaScript expression that records the focused
// element (window.__tabbed) with the look of its focus ring: the outline
// and box-shadow of it, its parent, its label and the sibling before it
// (a field's ring may be drawn on its wrapper or its styled label). Its
// value describes the element.
const a11yFocusStep = `(() => {
	const el = document.activeElement;
	const ring = (e) => e ? [e, e.parentElement, e.previousElementSibling, ...(e.labels || [])].filter(Boolean).map((x) => {
		const cs = getComputedStyle(x);
		return cs.outlineStyle + ' ' + cs.outlineWidth + ' ' + cs.outlineColor + ' | ' + cs.boxShadow;
	}).join(' ; ') : '';
	window.__tabbed = window.__tabbed || [];
	const label = el === document.body ? 'body' : (el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' "' +
		((el.getAttribute('aria-label') || (el.labels && el.labels[0] && el.labels[0].textContent) || el.textContent || el.value || '').trim().slice(0, 30)) + '"');
	window.__tabbed.push({el, label, focused: ring(el), ring});
	return label;
})()`

// a11yUnfocusedRings is a JavaScript expression listing the elements
// window.__tabbed recorded whose look does not change when they lose
// focus: they have no visible focus indicator.
const a11yUnfocusedRings = `(() => {
	document.activeElement.blur();
	return (window.__tabbed || []).filter((t) => t.label !== 'body' && t.ring(t.el) === t.focused).map((t) => t.label).join('\n');
})()`

// fromTop reloads the page, waits for ready and moves the keyboard's
// starting point to the top of the document, as a user arriving at the
// page has it.
func (p *browserPage) fromTop(ready string) {
	p.t.Helper()
	p.do("reload", chromedp.Reload())
	p.waitFor("the view after reload", ready)
	eval[chromedp.Void](p, `(() => { const b = document.body; b.tabIndex = -1; b.focus(); b.removeAttribute('tabindex'); window.scrollTo(0, 0); })()`)
}

// tabThrough presses Tab until the focus comes back to the document (a
// whole round of the page, or of a modal dialog), at most n times, and
// returns what each press focused; it fails t for every control without
// a visible focus indicator. It leaves a notebook's editor as the page
// says: Escape, then Tab.
func (p *browserPage) tabThrough(n int) []string {
	p.t.Helper()
	eval[chromedp.Void](p, `window.__tabbed = []`)
	var order []string
	for range n {
		p.escapeEditor()
		p.do("Tab", chromedp.KeyEvent("\t"))
		focused := eval[string](p, a11yFocusStep)
		if focused == "body" {
			break
		}
		order = append(order, focused)
	}
	if bad := eval[string](p, a11yUnfocusedRings); bad != "" {
		p.t.Errorf("no visible focus indicator on:\n%s", bad)
	}
	return order
}

// tabTo presses Tab until the focused element matches the CSS selector
// sel, at most 60 times, failing t if it never does; it leaves a
// notebook's editor as tabThrough does.
func (p *browserPage) tabTo(sel string) {
	p.t.Helper()
	for range 60 {
		p.escapeEditor()
		p.do("Tab", chromedp.KeyEvent("\t"))
		if eval[bool](p, `document.activeElement.matches(`+js(sel)+`)`) {
			return
		}
	}
	p.fail("Tab to "+sel, context.DeadlineExceeded)
}

// escapeEditor presses Escape if the focus is in a notebook's editor,
// where Tab indents, so that the next Tab leaves it.
func (p *browserPage) escapeEditor() {
	p.t.Helper()
	if eval[bool](p, `document.activeElement.matches('.code-input')`) {
		p.do("Escape from the editor", chromedp.KeyEvent("\u001b"))
	}
}

// audit fails t with each accessibility problem the page shows.
func (p *browserPage) audit(view string) {
	p.t.Helper()
	if got := eval[string](p, a11yAudit); got != "" {
		p.t.Errorf("%s: accessibility problems:\n%s", view, got)
	}
}

// checkOrder fails t unless the focus order starts with want[0] and
// holds each of want (substrings of the focused elements' descriptions)
// in that order.
func checkOrder(t *testing.T, order, want []string) {
	t.Helper()
	i := 0
	for _, o := range order {
		if i < len(want) && strings.Contains(o, want[i]) {
			i++
		}
	}
	if len(order) == 0 || !strings.Contains(order[0], want[0]) || i < len(want) {
		t.Errorf("Tab order %q does not reach %q in order", order, want)
	}
}

// TestUIAccessibility checks each view of the web UI in Chromium against
// a real `crucible serve`: the Analyst with an analysis open and its
// profile shown (a server without a model profiles), the Notebook with a
// cell run, Runs with a run open, and the key prompt of a server that
// requires keys. In each it checks names of fields, buttons, links and
// images, the document's lang, title and headings, the contrast of all
// visible text (WCAG AA), that a round of Tab from the top reaches the
// main controls in order, each with a visible focus indicator, and the
// keyboard behaviours the UI documents: the skip link moves the focus to
// the content and keeps the view, Enter asks and Shift+Enter starts a new
// line in the analyst, Escape then Tab leaves a notebook's editor,
// Shift+Enter runs a cell, Escape closes the key prompt. The lists of
// analyses and sessions, a failed cell and a failed run are checked too.
// Its first subtest checks the audit itself, one fault at a time.
func TestUIAccessibility(t *testing.T) {
	// The audit itself, on the bare page with one fault added at a time.
	t.Run("audit", func(t *testing.T) {
		p := modulePage(t)
		p.waitFor("the runs view", `document.querySelector('main h1')`)
		cases := []struct{ name, html, want string }{
			{"nothing added", ``, ``},
			{"labelled field", `<label for="a-f">Name</label><input id="a-f">`, ``},
			{"wrapped field", `<label>Name <select><option>x</option></select></label>`, ``},
			{"field without a label", `<input id="a-f" placeholder="name">`, `field without a label: input#a-f`},
			{"empty button", `<button id="a-b"></button>`, `button without a name: button#a-b`},
			{"icon link named by aria-label", `<a href="#x" aria-label="Home"><img alt="" src="data:,"></a>`, ``},
			{"image without alt", `<img id="a-i" src="data:,">`, `image without alt: img#a-i`},
			{"skipped heading", `<h4 id="a-h">Deep</h4>`, `heading skips from h1 to h4: h4#a-h "Deep"`},
			{"second h1", `<h1>Again</h1>`, `2 h1 headings`},
			{"grey on white", `<p id="a-p" data-style="color: #999">faint</p>`, `contrast 2.85 < 4.5: p#a-p "faint" #999999 on #ffffff`},
			{"large bold grey", `<p id="a-p" data-style="color: #888; font: bold 19px sans-serif">big</p>`, ``},
			{"dark on translucent dark", `<div data-style="background: rgb(0 0 0 / 0.8)"><p id="a-p" data-style="color: #444">dim</p></div>`, `contrast 1.30 < 4.5: p#a-p "dim" #444444 on #333333`},
			{"disabled button", `<button id="a-b" disabled data-style="color: #ccc">Off</button>`, ``},
		}
		// The page's policy forbids style attributes: data-style is set through the CSSOM.
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got := eval[string](p, `(() => { const d = document.createElement('div'); d.id = 'a11y-case'; d.innerHTML = `+js(tc.html)+`;
					for (const e of d.querySelectorAll('[data-style]')) e.style.cssText = e.dataset.style;
					document.getElementById('main').append(d); const r = `+a11yAudit+`; d.remove(); return r; })()`)
				if got != tc.want {
					t.Errorf("audit of %s = %q, want %q", tc.html, got, tc.want)
				}
			})
		}
	})

	t.Run("analyst", func(t *testing.T) {
		srv := analystServer(t, "")
		p := newBrowserPage(t)
		p.do("open the analyst", chromedp.Navigate(srv.URL+"/#/analyses"))
		p.waitFor("the upload form", `document.querySelector('#an-image option[value="datascience"]')`)
		p.audit("the analyst's upload form")
		id := p.uploadAnalysis(testenv.Dataset(t, "dabench/tables/insurance.csv"))
		p.audit("analysis " + id)
		p.fromTop(`document.querySelector('.profile-table')`)
		order := p.tabThrough(150)
		t.Logf("Tab order: %q", order)
		checkOrder(t, order, []string{"Skip to the content", "Analyst", "Notebook", "Runs", "API key", "Close analysis", "All analyses", "Profile", "Columns of insurance", "an-question", "Ask", "an-approve", "an-text-mode"})
		p.fromTop(`document.querySelector('.profile-table')`)
		p.tabTo("#an-question")
		p.do("type a question over two lines", chromedp.KeyEvent("What is the mean"),
			chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)), chromedp.KeyEvent("charge?"))
		if got := eval[string](p, `document.getElementById('an-question').value + '|' + document.querySelector('.ask-form .form-error').textContent`); got != "What is the mean\ncharge?|" {
			t.Errorf("after Shift+Enter the question and its error are %q, want a new line and nothing asked", got)
		}
		p.do("press Enter", chromedp.KeyEvent("\r"))
		p.waitFor("Enter asked (the server has no model)", `document.querySelector('.ask-form .form-error').textContent.startsWith('This server cannot answer questions')`)
		p.audit("the analysis with the question refused")

		p.do("the list of analyses", chromedp.Navigate(srv.URL+"/#/analyses"))
		p.waitFor("the analysis listed", `document.querySelector('main a[href="#/analyses/`+id+`"]')`)
		p.audit("the list of analyses")
		p.fromTop(`document.querySelector('main a[href="#/analyses/` + id + `"]')`)
		order = p.tabThrough(150)
		t.Logf("Tab order: %q", order)
		checkOrder(t, order, []string{"Skip to the content", "Analyst", "API key", "an-files", "an-image", id})
	})

	t.Run("notebook", func(t *testing.T) {
		crucibleBinary(t)
		srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"), "--image", "host")
		p := newBrowserPage(t)
		p.do("open the notebook", chromedp.Navigate(srv.URL+"/#/notebook"))
		p.waitFor("the session form", `document.querySelector('#nb-image option')`)
		p.audit("the notebook's session list")
		p.do("new session", chromedp.Click(chromedp.CSS(`form[aria-label="New session"] button`)))
		p.waitFor("the notebook", `location.hash.startsWith('#/notebook/ses') && document.querySelector('.cell textarea')`)
		p.runCell(0, "print('hello')\n21 * 2")
		p.runCell(1, "import sys\nprint('warned', file=sys.stderr)\nx = undefined_name")
		p.audit("a notebook with a cell run and one failed")
		p.fromTop(`document.querySelector('.cell textarea')`)
		order := p.tabThrough(150)
		t.Logf("Tab order: %q", order)
		checkOrder(t, order, []string{"Skip to the content", "Analyst", "Notebook", "Runs", "API key", "Run all", "Close session", "All sessions", "Run this cell", "Code of cell 1", "Code of cell 2", "Traceback", "Code of cell 3", "Add cell", "nb-upload", "Refresh"})
		p.fromTop(`document.querySelector('.cell textarea')`)
		p.tabTo(".cell:last-child textarea")
		p.do("type code and press Shift+Enter", chromedp.KeyEvent("print(6 * 7)"),
			chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)))
		p.waitFor("the cell ran from the keyboard", `Array.from(document.querySelectorAll('.cell .stdout')).some((e) => e.textContent === '42\n')`)

		sid := strings.TrimPrefix(eval[string](p, `location.hash`), "#/notebook/")
		p.do("the list of sessions", chromedp.Navigate(srv.URL+"/#/notebook"))
		p.waitFor("the session listed", `document.querySelector('main a[href="#/notebook/`+sid+`"]')`)
		p.audit("the list of sessions")
		p.fromTop(`document.querySelector('main a[href="#/notebook/` + sid + `"]')`)
		order = p.tabThrough(150)
		t.Logf("Tab order: %q", order)
		checkOrder(t, order, []string{"Skip to the content", "Notebook", "API key", "nb-image", sid})
	})

	t.Run("runs", func(t *testing.T) {
		crucibleBinary(t)
		srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"))
		ctx := context.Background()
		failed, err := srv.Client.CreateRun(ctx, sandbox.Request{Language: sandbox.Python, Code: "print('before')\nraise ValueError('bad value')"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := srv.Client.CreateRun(ctx, sandbox.Request{Language: sandbox.Python, Code: dotPNG})
		if err != nil {
			t.Fatal(err)
		}
		p := newBrowserPage(t)
		p.do("open the failed run", chromedp.Navigate(srv.URL+"/#/runs/"+failed.ID))
		p.waitFor("its error", `document.querySelector('.run-detail ol.code li.error-line')`)
		p.audit("failed run " + failed.ID)
		p.do("open the run", chromedp.Navigate(srv.URL+"/#/runs/"+res.ID))
		loaded := `(() => { const img = document.querySelector('.run-detail .figure img'); return img && img.complete && img.naturalWidth === 1; })()`
		p.waitFor("the run and its image", loaded)
		p.audit("run " + res.ID)
		p.fromTop(loaded)
		order := p.tabThrough(150)
		t.Logf("Tab order: %q", order)
		for _, id := range []string{failed.ID, res.ID} {
			checkOrder(t, order, []string{"Skip to the content", "Clear", id[:20], "Standard output"})
		}
		// The skip link, from the keyboard: the focus moves to the content, the view stays.
		p.fromTop(loaded)
		p.do("Tab to the skip link and press Enter", chromedp.KeyEvent("\t"), chromedp.KeyEvent("\r"))
		p.waitFor("the focus in the content", `document.activeElement.id === 'main'`)
		if got := eval[string](p, `location.hash + ' ' + !!document.querySelector('.run-detail img')`); got != "#/runs/"+res.ID+" true" {
			t.Errorf("the skip link left the view: %q", got)
		}
		checkOrder(t, order, []string{"Skip to the content", "Analyst", "Notebook", "Runs", "API key", "runs-status", "runs-language", "runs-since", "Apply", "Clear", "Standard output"})
	})

	t.Run("key prompt", func(t *testing.T) {
		crucibleBinary(t)
		db := filepath.Join(t.TempDir(), "runs.db")
		var k struct{ Secret string }
		if err := json.Unmarshal([]byte(crucible(t, 0, "key", "create", "--tenant", "alice", "--name", "ui", "--json", "--db", db)), &k); err != nil {
			t.Fatal(err)
		}
		srv := startServer(t, "keyed server", db)
		if _, err := client.New(srv.URL, client.WithAPIKey(k.Secret)); err != nil {
			t.Fatal(err)
		}
		p := newBrowserPage(t)
		p.do("open the runs", chromedp.Navigate(srv.URL+"/#/runs"))
		p.waitFor("the key prompt", `document.getElementById('key-dialog').open`)
		p.audit("the key prompt")
		if got := eval[string](p, `document.activeElement.id`); got != "key-input" {
			t.Errorf("the prompt focused %q, want the key's field", got)
		}
		p.do("an empty key", chromedp.KeyEvent("\r"))
		p.waitFor("the refusal", `document.getElementById('key-error').textContent.startsWith('Enter a key')`)
		p.audit("the key prompt's error")
		// The modal prompt holds the focus: it starts in the key's field.
		order := p.tabThrough(10)
		t.Logf("Tab order: %q", order)
		checkOrder(t, order, []string{"Use this key", "Cancel"})
		p.do("back to the field", chromedp.Focus(chromedp.ID("key-input")))
		p.do("Escape", chromedp.KeyEvent("\u001b"))
		p.waitFor("Escape closed the prompt", `!document.getElementById('key-dialog').open`)
		p.audit("the runs behind the cancelled prompt")
	})
}
