package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// dotPNG writes a 1×1 PNG, dot.png, in Python with the standard library
// only, so the run needs no image but the host's.
const dotPNG = `import base64
open('dot.png', 'wb').write(base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='))
print('wrote dot.png')`

// TestUIRuns drives the Run history view in Chromium against `crucible
// serve`: runs listed, filtered by status, one opened to its code, output,
// limits, metrics, digest and hash, with its image artifact loaded from
// the API; and a live run followed from before it starts. The live run is
// made deterministic with admission: the server runs one program at a
// time, a streamed run that sleeps holds the slot, so the run the page
// opens is queued until the test closes the sleeper's stream (which kills
// it); the page then sees the run's output arrive as events while it is
// still live, then its end.
func TestUIRuns(t *testing.T) {
	crucibleBinary(t)
	p := newBrowserPage(t)
	cfg := filepath.Join(t.TempDir(), "serve.json")
	if err := os.WriteFile(cfg, []byte(`{"max_concurrent": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"), "--config", cfg)
	ctx := context.Background()
	run := func(lang sandbox.Language, code string) string {
		res, err := srv.Client.CreateRun(ctx, sandbox.Request{Language: lang, Code: code})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	pngRun := run(sandbox.Python, dotPNG)
	errRun := run(sandbox.Python, "print('before')\nraise ValueError('bad value')")
	run(sandbox.Bash, "echo from bash")

	p.do("open the runs", chromedp.Navigate(srv.URL+"/#/runs"))
	p.waitFor("three runs", `document.querySelectorAll('.runs-list tbody tr').length === 3`)
	p.do("filter: error", chromedp.SetValue(chromedp.ID("runs-status"), "error"),
		chromedp.Click(chromedp.CSS(`.filters button[type="submit"]`)))
	p.waitFor("the error run only", `document.querySelectorAll('.runs-list tbody tr').length === 1 && document.querySelector('.runs-list tbody a').textContent === `+js(errRun))
	p.do("clear the filter", chromedp.Click(chromedp.CSS(`.filters button[type="reset"]`)))
	p.waitFor("three runs again", `document.querySelectorAll('.runs-list tbody tr').length === 3`)

	// The error run: its failing line marked in the code.
	p.do("open the error run", chromedp.Click(chromedp.CSS(`.runs-list a[href="#/runs/`+errRun+`"]`)))
	p.waitFor("its error", `document.querySelector('.run-detail .error-box') && document.querySelector('.run-detail ol.code li.error-line').textContent.includes("raise ValueError('bad value')")`)

	// The PNG run: its artifact fetched with the key header, shown from a blob.
	p.do("open the PNG run", chromedp.Click(chromedp.CSS(`.runs-list a[href="#/runs/`+pngRun+`"]`)))
	p.waitFor("its image", `(() => { const img = document.querySelector('.run-detail .figure img'); return img && img.complete && img.naturalWidth === 1 && img.src.startsWith('blob:'); })()`)
	rec, err := srv.Client.GetRun(ctx, pngRun)
	if err != nil {
		t.Fatal(err)
	}
	detail := eval[string](p, `document.querySelector('.run-detail').textContent`)
	for _, want := range []string{rec.CodeHash, "wrote dot.png", "Wall time", "Peak memory", "Limits", "Metrics", "dot.png"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the run's details do not show %q", want)
		}
	}
	p.do("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	p.screenshot("runs")

	// Live: a sleeper holds the one slot, streamed, until its stream closes.
	sleepCtx, stopSleeper := context.WithCancel(ctx)
	defer stopSleeper()
	body := `{"language": "python", "code": "import time\nprint('sleeping', flush=True)\ntime.sleep(600)"}`
	req, _ := http.NewRequestWithContext(sleepCtx, "POST", srv.URL+"/v1/runs?stream=1", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	readUntil(t, resp, "sleeping") // it holds the slot now
	liveID, err := srv.Client.RunAsync(ctx, sandbox.Request{Language: sandbox.Python, Code: "print('first', flush=True)\nprint('second')"})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := srv.Client.GetRun(ctx, liveID); err != nil || rec.Status != "queued" {
		t.Fatalf("the live run: %v, %v; want it queued behind the sleeper", rec, err)
	}
	p.do("open the queued run", chromedp.Navigate(srv.URL+"/#/runs/"+liveID))
	p.waitFor("it live and queued", `(document.querySelector('.run-detail .live') || {}).textContent === 'Live: queued'`)
	// Record what the output pane shows, and whether the run was live then.
	eval[chromedp.Void](p, `(() => {
		window.__seen = [];
		new MutationObserver(() => {
			const out = document.querySelector('.run-detail pre.stdout');
			window.__seen.push({out: out ? out.textContent : '', live: !!document.querySelector('.run-detail .live')});
		}).observe(document.querySelector('.run-detail'), {subtree: true, childList: true, characterData: true});
	})()`)
	stopSleeper()
	p.waitFor("the run's end", `document.querySelector('.run-detail h2 .badge').textContent === 'ok' && !document.querySelector('.run-detail .live')`)
	if got := eval[string](p, `document.querySelector('.run-detail pre.stdout').textContent`); got != "first\nsecond\n" {
		t.Errorf("the ended run's stdout %q", got)
	}
	if !eval[bool](p, `window.__seen.some(s => s.live && s.out.startsWith('first\n'))`) {
		t.Errorf("the page never showed the output while the run was live: %s", eval[string](p, `JSON.stringify(window.__seen)`))
	}
}

// readUntil reads a streamed answer until it holds text.
func readUntil(t *testing.T, resp *http.Response, text string) {
	t.Helper()
	var got []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(got), text) {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("the stream ended before %q: %v; read %q", text, err, got)
		}
	}
}

// TestUIKeys: a server that requires keys makes the page ask for one (the
// command that makes a key shown as code, no raw backticks); a
// wrong key is refused with the server's reason and not kept; a right one
// is kept in sessionStorage only; each tenant's page lists only its own
// runs and sessions.
func TestUIKeys(t *testing.T) {
	crucibleBinary(t)
	p := newBrowserPage(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	secret := func(tenant string) string {
		var k struct{ Secret string }
		if err := json.Unmarshal([]byte(crucible(t, 0, "key", "create", "--tenant", tenant, "--name", "ui", "--json", "--db", db)), &k); err != nil {
			t.Fatal(err)
		}
		return k.Secret
	}
	aliceKey, bobKey := secret("alice"), secret("bob")
	srv := startServer(t, "keyed server", db)
	newClient := func(key string) *client.Client {
		c, err := client.New(srv.URL, client.WithAPIKey(key))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	aliceRun, err := newClient(aliceKey).CreateRun(ctx, sandbox.Request{Language: sandbox.Python, Code: "print('alice')"})
	if err != nil {
		t.Fatal(err)
	}
	bobRun, err := newClient(bobKey).CreateRun(ctx, sandbox.Request{Language: sandbox.Python, Code: "print('bob')"})
	if err != nil {
		t.Fatal(err)
	}
	bobSession, err := newClient(bobKey).NewSession(ctx, sandbox.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}

	p.do("open the runs", chromedp.Navigate(srv.URL+"/#/runs"))
	p.waitFor("the key prompt", `document.getElementById('key-dialog').open`)
	if got := eval[string](p, `document.getElementById('key-reason').textContent`); !strings.Contains(got, "requires an API key") || strings.Contains(got, "`") {
		t.Errorf("the prompt says %q, want it to say a key is required, without raw backticks", got)
	}
	if got := eval[string](p, `Array.from(document.querySelectorAll('#key-reason code')).map(e => e.textContent).join()`); got != "crucible key create" {
		t.Errorf("the prompt's command shown as code: %q, want %q", got, "crucible key create")
	}
	p.screenshot("key-prompt")
	p.do("a wrong key", chromedp.SendKeys(chromedp.ID("key-input"), "crk_wrong"), chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)))
	p.waitFor("the refusal", `document.getElementById('key-error').textContent.startsWith('The key was refused')`)
	if got := eval[string](p, `document.getElementById('key-error').textContent`); !strings.Contains(got, "invalid or revoked") {
		t.Errorf("the refusal says %q, want the server's reason", got)
	}
	if eval[bool](p, `!document.getElementById('key-dialog').open || sessionStorage.length !== 0`) {
		t.Errorf("a wrong key closed the prompt or was kept")
	}
	p.do("alice's key", chromedp.SetValue(chromedp.ID("key-input"), aliceKey), chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)))
	p.waitFor("alice's runs", `!document.getElementById('key-dialog').open && document.querySelectorAll('.runs-list tbody a').length === 1`)
	if got := eval[string](p, `document.querySelector('.runs-list tbody a').textContent`); got != aliceRun.ID {
		t.Errorf("alice's page lists run %q, want %q", got, aliceRun.ID)
	}
	if !eval[bool](p, `sessionStorage.getItem('crucible.apiKey') === `+js(aliceKey)+` && localStorage.length === 0 && document.cookie === ''`) {
		t.Errorf("the key is not kept in sessionStorage only")
	}
	p.do("alice's sessions", chromedp.Navigate(srv.URL+"/#/notebook"))
	p.waitFor("alice has none", `document.querySelector('main').textContent.includes('No open sessions')`)

	// Bob, with the key button: his run and his session only.
	p.do("bob's key", chromedp.Click(chromedp.ID("key-button")))
	p.waitFor("the prompt", `document.getElementById('key-dialog').open`)
	p.do("bob's key", chromedp.SetValue(chromedp.ID("key-input"), bobKey), chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)))
	p.waitFor("bob's session", `Array.from(document.querySelectorAll('table.grid a')).map(a => a.textContent).join() === `+js(bobSession.ID()))
	p.do("bob's runs", chromedp.Navigate(srv.URL+"/#/runs"))
	p.waitFor("bob's run only", `Array.from(document.querySelectorAll('.runs-list tbody a')).map(a => a.textContent).join() === `+js(bobRun.ID))
}
