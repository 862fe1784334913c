package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/webui"
)

// modulePage opens the UI's page, served by webui.Handler alone (no
// sandbox needed), to call its modules.
func modulePage(t *testing.T) *browserPage {
	t.Helper()
	p := newBrowserPage(t)
	ts := httptest.NewServer(webui.Handler())
	t.Cleanup(ts.Close)
	p.do("open the page", chromedp.Navigate(ts.URL+"/#/runs"))
	return p
}

// TestUISanitizer: hostile and ordinary table markup through the page's
// sanitiser; the result, as markup, holds only table elements, checked
// attributes and text; nothing of the program's runs.
func TestUISanitizer(t *testing.T) {
	p := modulePage(t)
	cases := []struct{ name, in, want string }{
		{"pandas", `<div><style scoped>.dataframe tbody tr th { vertical-align: top; }</style><table border="1" class="dataframe"><thead><tr style="text-align: right;"><th></th><th>a</th></tr></thead><tbody><tr><th>0</th><td>1.5</td></tr></tbody></table><p>1 rows × 1 columns</p></div>`,
			`<table><thead><tr><th></th><th>a</th></tr></thead><tbody><tr><th>0</th><td>1.5</td></tr></tbody></table>1 rows × 1 columns`},
		{"handlers and styles dropped", `<table><tr><td onclick="window.__pwned=1" style="x" class="c" id="i">x</td></tr></table>`, `<table><tr><td>x</td></tr></table>`},
		{"img, script, iframe dropped", `<table><tr><td>a<img src=x onerror="window.__pwned=2"><script>window.__pwned=3</script><iframe srcdoc="<script>window.__pwned=4</script>"></iframe>b</td></tr></table>`, `<table><tr><td>ab</td></tr></table>`},
		{"script text dropped", `<script>window.__pwned=5</script><SCRIPT >x</SCRIPT >`, ``},
		{"unclosed script drops the rest", `<table><tr><td>a</td></tr></table><script>window.__pwned=6`, `<table><tr><td>a</td></tr></table>`},
		{"links unwrapped", `<table><tr><td><a href="javascript:window.__pwned=7">link</a></td></tr></table>`, `<table><tr><td>link</td></tr></table>`},
		{"cells outside a table are text", `<td>loose</td><tr><th>x</th></tr>`, `loosex`},
		{"spans kept when numbers", `<table><tr><td colspan="2" rowspan="x">a</td><th scope="col" colspan=3>b</th><th scope="javascript">c</th></tr></table>`, `<table><tr><td colspan="2">a</td><th scope="col" colspan="3">b</th><th>c</th></tr></table>`},
		{"entities decoded to text", `<table><tr><td>&lt;img src=x onerror=alert(1)&gt; &amp; &#60;b&#x3e; &nbsp;&bogus;</td></tr></table>`, `<table><tr><td>&lt;img src=x onerror=alert(1)&gt; &amp; &lt;b&gt; &nbsp;&amp;bogus;</td></tr></table>`},
		{"a quoted > does not end a tag", `<table><tr><td title="a>b" colspan="2">x</td></tr></table>`, `<table><tr><td colspan="2">x</td></tr></table>`},
		{"a tag the input ends in", `<table><tr><td>a</td><td onclick="x`, `<table><tr><td>a</td></tr></table>`},
		{"comments and doctypes", `<!DOCTYPE html><!-- <script>window.__pwned=8</script> --><table><tr><td>a</td></tr></table>`, `<table><tr><td>a</td></tr></table>`},
		{"svg dropped", `<svg><script>window.__pwned=9</script></svg><math><mi>x</mi></math>`, ``},
		{"a lone < is text", `<table><tr><td>1 < 2</td></tr></table>`, `<table><tr><td>1 &lt; 2</td></tr></table>`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := eval[string](p, `import('/ui/sanitize.js').then(m => {
				const d = document.createElement('div');
				d.append(m.sanitizeTable(`+js(tc.in)+`).fragment);
				return d.innerHTML;
			})`)
			if got != tc.want {
				t.Errorf("sanitizeTable(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
	if got := eval[bool](p, `new Promise(r => setTimeout(() => r(window.__pwned === undefined), 200))`); !got {
		t.Errorf("a script of the markup ran: window.__pwned = %v", eval[any](p, `window.__pwned`))
	}
	// Bounded: a huge table is cut at the node budget; deep nesting stays linear.
	cut := eval[[]any](p, `import('/ui/sanitize.js').then(m => {
		const r = m.sanitizeTable('<table>' + '<tr><td>1</td></tr>'.repeat(100000) + '</table>', 1000);
		const deep = m.sanitizeTable('<b>'.repeat(200000) + '</i>'.repeat(200000));
		return [r.truncated, r.fragment.querySelectorAll('*').length, deep.truncated];
	})`)
	if cut[0] != true || cut[1].(float64) > 1000 || cut[2] != false {
		t.Errorf("the node budget: truncated %v with %v elements (want true, at most 1000); deep nesting %v", cut[0], cut[1], cut[2])
	}
}

// TestUIWithCode: messages quote commands between backticks; the page
// shows each quoted part as a <code> element, never a raw backtick, and
// every part as text (markup in a message stays text); an unpaired
// backtick leaves the message as it is.
func TestUIWithCode(t *testing.T) {
	p := modulePage(t)
	cases := []struct{ name, in, want string }{
		{"one command", "This server requires an API key (`crucible key create` makes one).",
			"This server requires an API key (<code>crucible key create</code> makes one)."},
		{"two, one at the end", "run `a` then `b`", "run <code>a</code> then <code>b</code>"},
		{"markup stays text", "`<img src=x onerror=window.__pwned=1>` and <b>x</b>",
			"<code>&lt;img src=x onerror=window.__pwned=1&gt;</code> and &lt;b&gt;x&lt;/b&gt;"},
		{"unpaired", "a ` b", "a ` b"},
		{"none", "plain", "plain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := eval[string](p, `import('/ui/dom.js').then(m => { const d = document.createElement('div'); d.append(...m.withCode(`+js(tc.in)+`)); return d.innerHTML; })`)
			if got != tc.want {
				t.Errorf("withCode(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
	if !eval[bool](p, `window.__pwned === undefined`) {
		t.Error("markup in a message ran")
	}
}

// TestUIEventParser: the page's Server-Sent Events parser, fed in
// chunks split anywhere (inside a line, between \r and \n), against the
// events the standard says the stream holds.
func TestUIEventParser(t *testing.T) {
	p := modulePage(t)
	type event struct {
		Event string `json:"event,omitempty"`
		Data  string `json:"data,omitempty"`
		ID    string `json:"id,omitempty"`
		Retry int    `json:"retry,omitempty"`
	}
	cases := []struct {
		name   string
		chunks []string
		want   []event
	}{
		{"one event", []string{"event: stdout\ndata: \"hi\"\n\n"}, []event{{Event: "stdout", Data: `"hi"`}}},
		{"split everywhere", []string{"ev", "ent: res", "ult\nda", "ta: {}\n", "\n"}, []event{{Event: "result", Data: "{}"}}},
		{"CRLF split between CR and LF", []string{"data: a\r", "\n\r", "\n"}, []event{{Event: "message", Data: "a"}}},
		{"lone CRs", []string{"data: a\rdata: b\r\r"}, []event{{Event: "message", Data: "a\nb"}}},
		{"comments ignored", []string{": keep-alive\n\n", "data: x\n\n"}, []event{{Event: "message", Data: "x"}}},
		{"ids carry over", []string{"id: 7\nevent: stdout\ndata: 1\n\nevent: stderr\ndata: 2\n\n"}, []event{{Event: "stdout", Data: "1", ID: "7"}, {Event: "stderr", Data: "2", ID: "7"}}},
		{"retry", []string{"retry: 1000\n\n"}, []event{{Retry: 1000}}},
		{"no space after the colon", []string{"data:x\n\n"}, []event{{Event: "message", Data: "x"}}},
		{"an unended event is dropped", []string{"data: x\n"}, nil},
		{"empty data lines join", []string{"data\ndata: b\n\n"}, []event{{Event: "message", Data: "\nb"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chunks, _ := json.Marshal(tc.chunks)
			raw := eval[string](p, `import('/ui/sse.js').then(async m => {
				const chunks = `+string(chunks)+`;
				const stream = new ReadableStream({ start(c) { for (const s of chunks) c.enqueue(s); c.close(); } });
				const out = [];
				for await (const e of m.parseEvents(stream)) out.push(e);
				return JSON.stringify(out);
			})`)
			var got []event
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	over := eval[string](p, `import('/ui/sse.js').then(async m => {
		const stream = new ReadableStream({ start(c) { c.enqueue('data: ' + 'x'.repeat(5000)); c.close(); } });
		try { for await (const e of m.parseEvents(stream, 1000)) {} return 'no error'; } catch (e) { return e.message; }
	})`)
	if over != "an event is over 1000 characters" {
		t.Errorf("an event over the bound: %q", over)
	}
}

// TestUICellDisplays: a cell's displays (sandbox.Display) through the
// page's displayView: a table sanitised, a PNG as an image from a blob
// URL, JSON indented, and HTML that is no table, SVG, Markdown and
// omitted data as the object's text; nothing of the program's markup is
// in the page and none of its script runs.
func TestUICellDisplays(t *testing.T) {
	p := modulePage(t)
	png := `{"base64": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}`
	cases := []struct{ name, display, want string }{
		{"table", `{"mime": "text/html", "data": "<table><tr><td onclick=\"window.__pwned=1\">7</td></tr></table><script>window.__pwned=2</script>", "text": "7"}`,
			`<div class="table-wrap" role="region" aria-label="d" tabindex="0"><table><tr><td>7</td></tr></table></div>`},
		{"png", `{"mime": "image/png", "data": ` + png + `, "text": "<Figure>"}`, `IMG`},
		{"json", `{"mime": "application/json", "data": "{\"a\":[1]}", "text": "x"}`,
			`<pre class="output display" aria-label="d">{
  "a": [
    1
  ]
}</pre>`},
		{"html that is no table", `{"mime": "text/html", "data": "<img src=x onerror=\"window.__pwned=3\"><p>hi</p>", "text": "Page()"}`,
			`<pre class="output display" aria-label="d">Page()</pre>`},
		{"svg", `{"mime": "image/svg+xml", "data": "<svg onload=\"window.__pwned=4\"><script>window.__pwned=5</script></svg>", "text": "<Drawing>"}`,
			`<pre class="output display" aria-label="d">&lt;Drawing&gt;</pre>`},
		{"markdown", `{"mime": "text/markdown", "data": "**bold** <img src=x onerror=\"window.__pwned=6\">", "text": "x"}`,
			`<pre class="output display" aria-label="d">**bold** &lt;img src=x onerror="window.__pwned=6"&gt;</pre>`},
		{"omitted", `{"mime": "image/png", "text": "<Figure>", "omitted": "too large"}`,
			`<div class="display"><pre class="output display" aria-label="d">&lt;Figure&gt;</pre><p class="note">(image/png not shown: too large)</p></div>`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := eval[string](p, `import('/ui/render.js').then(m => {
				const el = m.displayView(`+tc.display+`, 'd', new Set());
				return el.querySelector('img') ? 'IMG' : el.outerHTML;
			})`)
			if got != tc.want {
				t.Errorf("displayView(%s)\n got %q\nwant %q", tc.display, got, tc.want)
			}
		})
	}
	if got := eval[bool](p, `new Promise(r => setTimeout(() => r(window.__pwned === undefined), 200))`); !got {
		t.Errorf("a script of a display ran: window.__pwned = %v", eval[any](p, `window.__pwned`))
	}
}
