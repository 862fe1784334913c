package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/swe"
)

// sweFixer is a local server speaking the OpenAI chat-completions wire
// format with native tool calls, standing in for a model (none can run
// here): it views calc.py, replaces its bug by fix, runs the tests and
// submits, one tool call a turn (the n-th reply is the n-th call, n the
// assistant messages the request holds). With gate set, its submit waits
// until gate is closed.
func sweFixer(t *testing.T, key, fix string, gate <-chan struct{}) *httptest.Server {
	t.Helper()
	calls := []struct {
		name string
		args map[string]any
	}{
		{"view", map[string]any{"path": "calc.py"}},
		{"edit", map[string]any{"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": fix}},
		{"run_tests", map[string]any{}},
		{"submit", map[string]any{}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		n := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		c := calls[min(n, len(calls)-1)]
		if c.name == "submit" && gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		args, _ := json.Marshal(c.args)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-swe", "object": "chat.completion", "created": 1, "model": "scripted",
			"choices": []map[string]any{{"index": 0, "finish_reason": "tool_calls",
				"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
					"id": fmt.Sprintf("call_%d", n), "type": "function",
					"function": map[string]any{"name": c.name, "arguments": string(args)}}}}}},
			"usage": map[string]int{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hostileFix fixes the bug with a comment holding markup: the page must
// show it as text, never as elements (a script, an image whose onerror
// runs). An alert would open a dialog and an inline handler break the
// page's Content-Security-Policy: both fail the test too.
const hostileFix = `return a + b  # </pre><script>alert('script')</script><img src=x onerror="alert('img')">`

// TestUISWERun: a swe run created through the API (mode "swe", a
// scripted model) ends resolved; its page in the Agent runs view shows
// its status, the tests before and after (each test's outcome, fail to
// pass), the diff with its added and removed lines styled, the hostile
// markup of the diff as text, and the trace's tool calls; the page passes
// the accessibility audit of the other views. Needs root,
// Chromium and the data-science image (git, pytest).
func TestUISWERun(t *testing.T) {
	const key = "sk-scripted-model-key-swe-0123456"
	model := sweFixer(t, key, hostileFix, nil)
	t.Setenv("CRUCIBLE_TEST_MODEL_KEY", key)
	srv := analystServer(t, fmt.Sprintf(`"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}`, model.URL+"/v1"))
	p := newBrowserPage(t)

	dir := filepath.Join(t.TempDir(), "repo")
	for name, content := range map[string]string{
		"calc.py":      "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n",
		"test_calc.py": "from calc import add, neg\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_neg():\n    assert neg(4) == -4\n",
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := swe.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, err := srv.Client.StartAgentRun(ctx, api.AgentRunRequest{Mode: api.ModeSWE, Task: "fix the failing test in test_calc.py",
		SWERequest: api.SWERequest{Repo: &repo, Tests: []string{"test_calc.py::test_add"}}})
	if err != nil {
		t.Fatal(err)
	}
	ended, err := srv.Client.FollowAgentRun(ctx, run.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ended.Status != "resolved" || ended.SWE == nil || !strings.Contains(ended.SWE.Diff, "<script>") {
		t.Fatalf("the swe run ended %s (%s), outcome %+v", ended.Status, ended.Reason, ended.SWE)
	}

	p.do("open the agent runs", chromedp.Navigate(srv.URL+"/#/agent-runs"))
	p.waitFor("the run listed", `Array.from(document.querySelectorAll('.runs-list tbody tr')).some(tr => tr.textContent.includes(`+js(run.ID)+`) && tr.textContent.includes('swe') && tr.textContent.includes('resolved'))`)
	p.do("open the run", chromedp.Click(chromedp.CSS(`.runs-list a[href="#/agent-runs/`+run.ID+`"]`)))
	p.waitFor("its change", `document.querySelector('.agent-run pre.diff')`)

	if got := eval[string](p, `document.querySelector('.agent-run h2 .badge').textContent`); got != "resolved" {
		t.Errorf("the status badge says %q", got)
	}
	// The tests: test_add failed before and passes after (fail to pass); test_neg passed both times.
	row := func(id, cell string) string {
		return eval[string](p, `(() => { const tr = Array.from(document.querySelectorAll('.agent-run table.tests tbody tr')).find(tr => tr.dataset.test === `+js(id)+`); return tr ? tr.querySelectorAll('td')[`+cell+`].textContent : 'no row'; })()`)
	}
	for _, c := range []struct{ id, cell, want string }{
		{"test_calc.py::test_add", "1", "failed"}, {"test_calc.py::test_add", "2", "passed"}, {"test_calc.py::test_add", "3", "fail to pass"},
		{"test_calc.py::test_neg", "1", "passed"}, {"test_calc.py::test_neg", "2", "passed"},
	} {
		if got := row(c.id, c.cell); got != c.want {
			t.Errorf("test %s, column %s: %q, want %q", c.id, c.cell, got, c.want)
		}
	}
	summary := eval[string](p, `document.querySelector('.agent-run dl[aria-label="Test results"]').textContent`)
	for _, want := range []string{"1 passed, 1 failed", "2 passed, 0 failed", "Fail to pass", "test_calc.py::test_add"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the test results do not show %q: %s", want, summary)
		}
	}
	// The diff: lines styled by kind, the hostile markup shown as text.
	if got := eval[string](p, `Array.from(document.querySelectorAll('.agent-run pre.diff .diff-del')).map(e => e.textContent).join('')`); got != "-    return a - b\n" {
		t.Errorf("the removed lines: %q", got)
	}
	if got := eval[string](p, `Array.from(document.querySelectorAll('.agent-run pre.diff .diff-add')).map(e => e.textContent).join('')`); got != "+    "+hostileFix+"\n" {
		t.Errorf("the added lines: %q", got)
	}
	if eval[string](p, `getComputedStyle(document.querySelector('.agent-run .diff-add')).backgroundColor`) == eval[string](p, `getComputedStyle(document.querySelector('.agent-run .diff-del')).backgroundColor`) {
		t.Error("added and removed lines look the same")
	}
	if n := eval[int](p, `document.querySelectorAll('#main script, #main img, #main iframe').length`); n != 0 {
		t.Errorf("the diff's markup became %d elements", n)
	}
	// The trace's steps: the tool calls, with the edit's arguments as text.
	steps := eval[string](p, `Array.from(document.querySelectorAll('.agent-run .swe-step')).map(e => e.textContent).join('\n')`)
	for _, want := range []string{"view", "edit", "run_tests", "submit", "str_replace"} {
		if !strings.Contains(steps, want) {
			t.Errorf("the steps do not show %q:\n%s", want, steps)
		}
	}
	p.audit("a swe run") // names, headings, contrast of the diff's coloured lines and badges
	p.do("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	p.screenshot("swe-run")
	p.do("scroll to the change", chromedp.Evaluate[chromedp.Void](`document.querySelector('.agent-run pre.diff').scrollIntoView()`))
	p.screenshot("swe-run-diff")
}

// TestUISWEOutcomeModule: swe.js alone, in the page (no sandbox needed):
// a swe outcome with a hostile diff (markup, a closing </pre>, an
// element-like file name) renders its lines as text spans of their kind,
// creates no element from the diff, runs none of its script, and lists
// each test with its outcomes before and after; an empty diff says there
// is no change.
func TestUISWEOutcomeModule(t *testing.T) {
	p := modulePage(t)
	diff := "diff --git a/<b>x</b>.py b/<b>x</b>.py\n--- a/<b>x</b>.py\n+++ b/<b>x</b>.py\n@@ -1,2 +1,2 @@\n" +
		"-old = 1\n+" + hostileFix + "\n keep = 2\n"
	outcome := map[string]any{
		"diff":         diff,
		"before":       map[string]any{"command": "python3 -m pytest -q", "status": "error", "exit_code": 1, "passed": 1, "failed": 1, "cases": []map[string]string{{"id": "t.py::<img src=x onerror=alert(3)>", "outcome": "failed"}, {"id": "t.py::ok", "outcome": "passed"}}},
		"after":        map[string]any{"command": "python3 -m pytest -q", "status": "ok", "exit_code": 0, "passed": 2, "failed": 0, "applied": "git apply", "cases": []map[string]string{{"id": "t.py::<img src=x onerror=alert(3)>", "outcome": "passed"}, {"id": "t.py::ok", "outcome": "passed"}}},
		"fail_to_pass": []string{"t.py::<img src=x onerror=alert(3)>"},
		"submitted":    true,
	}
	trace := map[string]any{"steps": []map[string]any{{"kind": "tool", "tool": "bash", "args": `{"command":"<script>alert(4)</script>"}`, "output": "<img src=x onerror=alert(5)>"}}}
	in, _ := json.Marshal([]any{outcome, trace})
	got := eval[map[string]any](p, `import('/ui/swe.js').then(m => {
		const [o, tr] = `+string(in)+`;
		const d = document.createElement('div');
		d.append(...m.sweOutcome(o, tr).flat(Infinity).filter(Boolean));
		document.getElementById('main').append(d);
		const kinds = Array.from(d.querySelectorAll('pre.diff .diff-line')).map(e => e.className.replace('diff-line ', '') + ':' + e.textContent);
		const rows = Array.from(d.querySelectorAll('table.tests tbody tr')).map(tr => Array.from(tr.querySelectorAll('td')).map(td => td.textContent).join('|'));
		const empty = m.diffView('').textContent;
		return {kinds, rows, elements: d.querySelectorAll('script, img, b, iframe').length, steps: d.querySelector('.swe-steps').textContent, empty};
	})`)
	wantKinds := []string{
		"diff-meta:diff --git a/<b>x</b>.py b/<b>x</b>.py\n", "diff-meta:--- a/<b>x</b>.py\n", "diff-meta:+++ b/<b>x</b>.py\n",
		"diff-hunk:@@ -1,2 +1,2 @@\n", "diff-del:-old = 1\n", "diff-add:+" + hostileFix + "\n", "diff-context: keep = 2\n",
	}
	if fmt.Sprint(got["kinds"]) != fmt.Sprint(wantKinds) {
		t.Errorf("the diff's lines:\n got %q\nwant %q", got["kinds"], wantKinds)
	}
	if want := []any{"t.py::<img src=x onerror=alert(3)>|failed|passed|fail to pass", "t.py::ok|passed|passed|"}; fmt.Sprint(got["rows"]) != fmt.Sprint(want) {
		t.Errorf("the tests table: %q, want %q", got["rows"], want)
	}
	if got["elements"] != float64(0) {
		t.Errorf("the outcome's text became %v elements", got["elements"])
	}
	if s, _ := got["steps"].(string); !strings.Contains(s, "<script>alert(4)</script>") || !strings.Contains(s, "<img src=x onerror=alert(5)>") {
		t.Errorf("the steps do not show the call and its output as text: %q", s)
	}
	if got["empty"] != "No change." {
		t.Errorf("an empty diff shows %q", got["empty"])
	}
}

// TestUISWEUpload: the Agent runs view's form starts a swe run from a
// repository archive the user chooses (a .tgz): a missing archive and a
// wrong kind of file are refused in the form, naming the field; the
// started run opens at once and is followed live (its steps shown while
// the scripted model holds its submit), then shown as it ended: resolved,
// with its diff and tests. Needs root, Chromium and the data-science
// image.
func TestUISWEUpload(t *testing.T) {
	const key = "sk-scripted-model-key-swe-upload"
	gate := make(chan struct{})
	model := sweFixer(t, key, "return a + b", gate)
	t.Setenv("CRUCIBLE_TEST_MODEL_KEY", key)
	srv := analystServer(t, fmt.Sprintf(`"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}`, model.URL+"/v1"))
	p := newBrowserPage(t)
	dir := filepath.Join(t.TempDir(), "repo")
	for name, content := range map[string]string{
		"calc.py":      "def add(a, b):\n    return a - b\n",
		"test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := swe.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := t.TempDir()
	tgz, zip := filepath.Join(files, "repo.tgz"), filepath.Join(files, "repo.zip")
	for name, b := range map[string][]byte{tgz: repo.Archive, zip: []byte("PK")} {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	p.do("open the agent runs", chromedp.Navigate(srv.URL+"/#/agent-runs"))
	p.waitFor("the form", `document.querySelector('.swe-start summary')`)
	p.do("open the form", chromedp.Click(chromedp.CSS(`.swe-start summary`)))
	p.do("start without an archive", chromedp.Click(chromedp.CSS(`.swe-form button[type="submit"]`)))
	p.waitFor("the archive asked for", `document.getElementById('swe-error').textContent.startsWith('Choose the repository') && document.getElementById('swe-repo').getAttribute('aria-invalid') === 'true'`)
	p.do("choose a zip", chromedp.SetUploadFiles(chromedp.ID("swe-repo"), []string{zip}))
	p.do("start", chromedp.Click(chromedp.CSS(`.swe-form button[type="submit"]`)))
	p.waitFor("the zip refused", `document.getElementById('swe-error').textContent === 'repo.zip is not a .tar, .tar.gz, .tgz or .bundle file.'`)
	p.do("choose the tgz", chromedp.SetUploadFiles(chromedp.ID("swe-repo"), []string{tgz}))
	eval[chromedp.Void](p, `(() => {
		document.getElementById('swe-task').value = 'fix the failing test in test_calc.py';
		document.getElementById('swe-tests').value = 'test_calc.py::test_add\n';
	})()`)
	p.do("start", chromedp.Click(chromedp.CSS(`.swe-form button[type="submit"]`)))
	p.waitFor("the run open and live, its edit shown", `location.hash.startsWith('#/agent-runs/agt_') && document.querySelector('.agent-run .live') && document.querySelector('.agent-run .live-steps').textContent.includes('edit: str_replace calc.py')`)
	close(gate)
	p.waitFor("the run ended", `!document.querySelector('.agent-run .live') && document.querySelector('.agent-run pre.diff')`)
	if got := eval[string](p, `document.querySelector('.agent-run h2 .badge').textContent`); got != "resolved" {
		t.Errorf("the run ended %q", got)
	}
	if got := eval[string](p, `Array.from(document.querySelectorAll('.agent-run pre.diff .diff-add')).map(e => e.textContent).join('')`); got != "+    return a + b\n" {
		t.Errorf("the added lines: %q", got)
	}
	id := strings.TrimPrefix(eval[string](p, `location.hash`), "#/agent-runs/")
	run, err := srv.Client.GetAgentRun(context.Background(), id)
	if err != nil || run.Mode != api.ModeSWE || run.Task != "fix the failing test in test_calc.py" || len(run.SWE.FailToPass) != 1 {
		t.Errorf("the run the form started: %+v, %v", run, err)
	}
	p.audit("the swe form")
}
