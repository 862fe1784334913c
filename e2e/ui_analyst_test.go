package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
)

// analystServer starts `crucible serve --image datascience` with config
// extra (a JSON object's members, or ""); it needs the image.
func analystServer(t *testing.T, config string) *server {
	t.Helper()
	crucibleBinary(t)
	testenv.Image(t, "datascience")
	return startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"),
		append([]string{"--image", "datascience"}, configFlag(t, "{"+config+"}")...)...)
}

// uploadAnalysis creates an analysis from the Analyst view's form with
// files (through the file input, as a drop would) and waits until its
// page shows the profile; it returns the analysis's ID.
func (p *browserPage) uploadAnalysis(files ...string) string {
	p.t.Helper()
	p.waitFor("the upload form", `document.querySelector('#an-image option[value="datascience"]')`)
	p.do("choose the files", chromedp.SetUploadFiles(chromedp.ID("an-files"), files))
	p.waitFor("the files chosen", `document.querySelectorAll('.chosen li').length === `+strconv.Itoa(len(files))+` && !document.querySelector('.upload-form button[type="submit"]').disabled`)
	p.do("create", chromedp.Click(chromedp.CSS(`.upload-form button[type="submit"]`)))
	p.waitFor("the profile", `location.hash.startsWith('#/analyses/ana') && document.querySelector('.profile-table')`)
	return strings.TrimPrefix(eval[string](p, `location.hash`), "#/analyses/")
}

// ask asks question in the open analysis with Enter, as a user would,
// and returns the JavaScript expression of its item in the thread.
func (p *browserPage) ask(n int, question string, approve bool) string {
	p.t.Helper()
	eval[chromedp.Void](p, `(() => {
		document.getElementById('an-text-mode').checked = true;
		document.getElementById('an-approve').checked = `+strconv.FormatBool(approve)+`;
		const ta = document.getElementById('an-question'); ta.value = `+js(question)+`; ta.focus(); })()`)
	p.do("press Enter", chromedp.KeyEvent("\r"))
	sel := `document.querySelector('.question[data-n="` + strconv.Itoa(n) + `"]')`
	p.waitFor("question "+strconv.Itoa(n)+" in the thread", sel)
	return sel
}

// text is the text of the elements sel matches under the element of the
// expression root.
func (p *browserPage) text(root, sel string) string {
	p.t.Helper()
	return eval[string](p, `Array.from(`+root+`.querySelectorAll(`+js(sel)+`)).map(e => e.textContent).join('\n')`)
}

// chartLoaded is the condition that the chart of the question at root
// loaded from a blob URL with alt text title.
func chartLoaded(root, title string) string {
	return `(() => { const img = ` + root + `.querySelector('.chart img'); return img && img.complete && img.naturalWidth > 0 && img.src.startsWith('blob:') && img.alt === ` + js(title) + `; })()`
}

// TestUIAnalyst drives the Analyst view in Chromium against `crucible
// serve --image datascience` whose model is SCRIPTED: no model can run
// here, so a local HTTP server speaks the OpenAI chat-completions wire
// format from a script (llmtest.OpenAI), in the agent's text mode. It
// uploads DABench's insurance.csv and reads its profile; asks a question
// whose first program fails (the retry and its reason shown) and whose
// second prints the mean, waits for a file the test writes once the page
// shows that line live, and draws a titled chart, which must load; asks a
// follow-up that uses what the first defined and shows a table; approves
// one program and refuses another with a reason; reopens the analysis
// from the list. Its screenshots analyst.png (an answer with its chart)
// and analyst-profile.png are the docs'.
func TestUIAnalyst(t *testing.T) {
	insurance := testenv.Dataset(t, "dabench/tables/insurance.csv")
	const key = "sk-scripted-model-key-0123456789"
	model := llmtest.OpenAI(t, llmtest.Script{Key: key, Answer: "The mean of charges is 13270.42; the chart shows it by region.",
		Codes: []string{
			"print(df['charge'].mean())",
			"import os, time\nimport matplotlib.pyplot as plt\nmean = df['charges'].mean()\nprint('mean charges', round(mean, 2), flush=True)\n" +
				"while not os.path.exists('go'):\n    time.sleep(0.02)\nos.remove('go')\n" +
				"by_region = df.groupby('region')['charges'].mean()\nfig, ax = plt.subplots(figsize=(6, 3.2))\nax.bar(by_region.index, by_region.values, color='#0b57d0')\n" +
				"ax.axhline(mean, color='#b3261e', linestyle='--', label='overall mean')\nax.legend()\nax.set_title('Mean charges by region')\nax.set_xlabel('region')\nax.set_ylabel('charges (USD)')\nfig.tight_layout()",
			"above = df[df['charges'] > mean]\nprint('rows above the mean', len(above))\nabove.groupby('smoker')['charges'].agg(['count', 'mean']).round(2)",
			"print('the approved program ran')",
			"print('this program is refused')",
		}})
	t.Setenv("CRUCIBLE_TEST_MODEL_KEY", key)
	srv := analystServer(t, fmt.Sprintf(`"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}`, model.URL+"/v1"))
	p := newBrowserPage(t)

	p.do("open the UI", chromedp.Navigate(srv.URL+"/"))
	p.waitFor("the Analyst view, by default", `location.hash === '#/analyses' && document.querySelector('nav a[aria-current="page"]').textContent === 'Analyst'`)
	reportFirstRender(p)
	id := p.uploadAnalysis(insurance)
	profile := `document.querySelector('.profile-table[data-table="insurance"]')`
	for what, cond := range map[string]string{
		"the shape":           profile + `.textContent.includes('1338 rows × 7 columns')`,
		"df is insurance":     profile + `.querySelector('summary').textContent.includes('(also df)')`,
		"the columns":         `Array.from(` + profile + `.querySelectorAll('table.columns tbody th')).map(e => e.textContent).join() === 'age,sex,bmi,children,smoker,region,charges'`,
		"a dtype":             profile + `.querySelector('table.columns tbody tr:last-child td').textContent.startsWith('float64')`,
		"the summary stats":   profile + `.querySelector('table.columns tbody tr:last-child').textContent.includes('mean 13270.4')`,
		"the sample rows":     profile + `.querySelector('.sample tbody td').textContent === '19'`,
		"how it was read":     profile + `.textContent.includes('csv')`,
		"the question's help": `document.getElementById('an-question') === document.activeElement`,
	} {
		if !eval[bool](p, cond) {
			t.Errorf("profile: %s: false (%s)", what, cond)
		}
	}

	p.do("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	p.screenshot("analyst-profile")

	// The first question: a failed attempt, then a program whose output
	// the page shows while it runs (it waits for a file the test writes
	// once the line is shown), then its chart.
	q1 := p.ask(1, "What is the mean of charges? Plot the mean by region.", false)
	p.waitFor("the retry and its reason", `Array.from(`+q1+`.querySelectorAll('.step[data-kind="feedback"]')).some(e => e.textContent.includes('KeyError'))`)
	p.waitFor("the output, live", q1+`.dataset.state === 'running' && Array.from(`+q1+`.querySelectorAll('.steps .stdout')).some(e => e.textContent === 'mean charges 13270.42\n')`)
	sid := eval[string](p, `document.querySelector('.session-status').textContent.match(/session (\S+)/)[1]`)
	if r := srv.do(t, "PUT", "/v1/sessions/"+sid+"/files/go", "", strings.NewReader("")); r.Status != 204 {
		t.Fatalf("PUT go: %d %s", r.Status, r.Body)
	}
	p.waitFor("the answer", q1+`.dataset.state === 'answered' && `+q1+`.querySelector('.answer-text')`)
	p.waitFor("the chart loaded", chartLoaded(q1, "Mean charges by region"))
	for what, cond := range map[string]string{
		"the answer text":          q1 + `.querySelector('.answer-text').textContent.includes('13270.42')`,
		"the chart's caption":      q1 + `.querySelector('.chart figcaption').textContent.includes('Mean charges by region') && ` + q1 + `.querySelector('.chart figcaption').textContent.includes('y: charges (USD)')`,
		"the code, folded":         `!` + q1 + `.querySelector('details.answer-code').open && ` + q1 + `.querySelector('details.answer-code ol.code').textContent.includes("ax.set_title('Mean charges by region')")`,
		"its output, folded":       q1 + `.querySelector('details.answer-code pre').textContent.includes('mean charges 13270.42')`,
		"the chart's download":     q1 + `.querySelector('.downloads button').textContent.startsWith('Download ')`,
		"the verification step":    q1 + `.querySelector('.step[data-kind="verify"]') !== null`,
		"the progress folded once": `!` + q1 + `.querySelector('details.progress').open`,
	} {
		if !eval[bool](p, cond) {
			t.Errorf("first answer: %s: false (%s)", what, cond)
		}
	}
	p.do("fold the profile", chromedp.Evaluate[chromedp.Void](`document.querySelector('.profile-box').open = false; window.scrollTo(0, 0)`))
	p.screenshot("analyst")

	// A follow-up in the same thread, using the first's variable, with a table.
	q2 := p.ask(2, "How many rows are above that mean, by smoker?", false)
	p.waitFor("the follow-up's answer", q2+`.dataset.state === 'answered' && `+q2+`.querySelector('.table-wrap td')`)
	if got := p.text(q2, "details.answer-code pre"); !strings.Contains(got, "rows above the mean 420") {
		t.Errorf("the follow-up's output %q, want rows above the mean 420", got)
	}
	if got := p.text(q2, ".table-wrap tbody"); !strings.Contains(got, "yes") || !strings.Contains(got, "273") {
		t.Errorf("the follow-up's table %q, want the smokers' row (yes, 273)", got)
	}

	// Approval: one program approved, the next refused with a reason.
	q3 := p.ask(3, "Run it after I approve.", true)
	p.waitFor("the approval request", q3+`.querySelector('.approval ol.code') && `+q3+`.querySelector('.approval ol.code').textContent.includes("print('the approved program ran')")`)
	p.do("approve", chromedp.Click(chromedp.CSS(`.question[data-n="3"] .approval button.approve`)))
	p.waitFor("the approved program's answer", q3+`.dataset.state === 'answered' && `+q3+`.querySelector('details.answer-code pre').textContent.includes('the approved program ran')`)
	if got := p.text(q3, ".decision"); !strings.HasPrefix(got, "Approved by you") {
		t.Errorf("the decision shown %q", got)
	}
	q4 := p.ask(4, "Ask me again.", true)
	p.waitFor("the second approval request", q4+`.querySelector('.approval button.refuse')`)
	p.do("refuse", chromedp.SetValue(chromedp.ID("refuse-reason-4"), "not this one"),
		chromedp.Click(chromedp.CSS(`.question[data-n="4"] .approval button.refuse`)))
	p.waitFor("the refused question's end", q4+`.dataset.state === 'denied' && `+q4+`.querySelector('.decision').textContent === 'Refused by you: not this one'`)

	// Reopened from the list: the profile and the conversation, the chart loaded again.
	p.do("the list", chromedp.Navigate(srv.URL+"/#/analyses"))
	p.waitFor("the analysis listed", `Array.from(document.querySelectorAll('table.analyses a')).some(a => a.textContent === `+js(id)+`)`)
	p.do("reopen", chromedp.Click(chromedp.CSS(`table.analyses a[href="#/analyses/`+id+`"]`)))
	p.waitFor("the conversation", `document.querySelectorAll('.question').length === 4 && document.querySelector('.profile-table[data-table="insurance"]')`)
	p.waitFor("the chart, reopened", chartLoaded(`document.querySelector('.question[data-n="1"]')`, "Mean charges by region"))
	if got := p.text(`document`, `.question[data-n="2"] .answer-text`); !strings.Contains(got, "13270.42") {
		t.Errorf("the reopened follow-up's answer %q", got)
	}

	// A deep link, loaded afresh, opens the analysis.
	p.do("reload the deep link", chromedp.Reload())
	p.waitFor("the analysis, from its link", `location.hash === `+js("#/analyses/"+id)+` && document.querySelectorAll('.question').length === 4 && document.querySelector('.profile-table[data-table="insurance"]')`)
}

// TestUIAnalystHostileData: a CSV whose column names and values are
// markup (<img onerror>, <script>) and a file name that is markup are
// shown as text in the profile and the list; nothing runs. The server has
// no model: creating and profiling work, and asking shows the server's
// 501 message.
func TestUIAnalystHostileData(t *testing.T) {
	srv := analystServer(t, "")
	p := newBrowserPage(t)
	dir := t.TempDir()
	csv := filepath.Join(dir, `evil<img src=x onerror=alert(9)>.csv`)
	data := `"<img src=x onerror=""window.__pwned=1"">",<script>window.__pwned=2</script>,n` + "\n" +
		`"<img src=x onerror=""window.__pwned=3"">",<b onmouseover=alert(4)>bold</b>,1` + "\n" +
		`<svg onload=window.__pwned=5>,"<iframe src=javascript:alert(6)>",2` + "\n"
	if err := os.WriteFile(csv, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	p.do("open the UI", chromedp.Navigate(srv.URL+"/#/analyses"))
	p.uploadAnalysis(csv)
	p.waitFor("the sample rows", `document.querySelector('.sample tbody td')`)
	heads := eval[[]string](p, `Array.from(document.querySelectorAll('table.columns tbody th')).map(e => e.textContent)`)
	if want := []string{`<img src=x onerror="window.__pwned=1">`, `<script>window.__pwned=2</script>`, "n"}; strings.Join(heads, "|") != strings.Join(want, "|") {
		t.Errorf("column names shown %q, want %q", heads, want)
	}
	if got := p.text("document", ".sample tbody"); !strings.Contains(got, `<b onmouseover=alert(4)>bold</b>`) || !strings.Contains(got, `<svg onload=window.__pwned=5>`) {
		t.Errorf("sample values not shown as text: %q", got)
	}

	if !eval[bool](p, `window.__pwned === undefined && document.querySelectorAll('main img, main script, main iframe, main svg').length === 0`) {
		t.Error("the hostile data ran or became elements")
	}
	if got := p.text("document", ".session-status"); !strings.Contains(got, `evil<img src=x onerror=alert(9)>.csv`) {
		t.Errorf("the file name not shown as text: %q", got)
	}

	// No model: the question is refused with the server's 501 message.
	eval[chromedp.Void](p, `(() => { const ta = document.getElementById('an-question'); ta.value = 'What is the mean of n?'; ta.focus(); })()`)
	p.do("press Enter", chromedp.KeyEvent("\r"))
	p.waitFor("the 501 message", `document.querySelector('.ask-form .form-error').textContent.startsWith('This server cannot answer questions: ')`)
	t.Logf("asked without a model, the page says: %s", p.text("document", ".ask-form .form-error"))
	if n := eval[int](p, `document.querySelectorAll('.question').length`); n != 0 {
		t.Errorf("%d questions in the thread after a refused one", n)
	}
	p.do("the list", chromedp.Navigate(srv.URL+"/#/analyses"))
	p.waitFor("the list", `document.querySelector('table.analyses td:nth-child(2)')`)
	if got := p.text("document", "table.analyses td:nth-child(2)"); got != `evil<img src=x onerror=alert(9)>.csv` {
		t.Errorf("the list's dataset name %q", got)
	}
	if !eval[bool](p, `window.__pwned === undefined && document.querySelectorAll('main img, main script, main iframe, main svg').length === 0`) {
		t.Error("the hostile data ran or became elements in the list")
	}
}

// TestUIProfileSummary: the profile's one-line column statistics, for a
// numeric column (undefined statistics left out, long fractions cut to six
// significant digits), a date column and none.
func TestUIProfileSummary(t *testing.T) {
	p := modulePage(t)
	cases := []struct{ name, in, want string }{
		{"numeric", `{"mean": 13270.422265, "std": 12110.011237, "min": 1121.8739, "median": 9382.033, "max": 63770.42801}`,
			"mean 13270.4, std 12110, min 1121.87, median 9382.03, max 63770.4"},
		{"integers, no std", `{"mean": 3, "min": 3, "max": 3}`, "mean 3, min 3, max 3"},
		{"zero kept", `{"mean": 0, "min": -1.5, "max": 1.5}`, "mean 0, min -1.5, max 1.5"},
		{"dates", `{"min_text": "2020-01-01", "max_text": "2021-06-30"}`, "2020-01-01 to 2021-06-30"},
		{"one date bound", `{"max_text": "2021-06-30"}`, "? to 2021-06-30"},
		{"none", `null`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := eval[string](p, `import('/ui/profile.js').then(m => m.summary(`+tc.in+`))`)
			if got != tc.want {
				t.Errorf("summary(%s) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
