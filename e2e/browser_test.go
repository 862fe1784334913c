package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// The web UI's tests drive Debian's headless Chromium (package chromium,
// which scripts/setup.sh installs) with chromedp against a real `crucible
// serve`. CRUCIBLE_CHROMIUM names another browser binary (testenv.Chromium).
// Screenshots go to CRUCIBLE_SCREENSHOTS (a directory), or to
// the test's temporary directory.

// uiStepTimeout bounds one step of a browser test (a click and the wait
// for what it shows); a cell of the data-science image takes a few seconds.
const uiStepTimeout = 90 * time.Second

// browserPage is a tab of a headless Chromium, with what the page wrote to
// its console and the dialogs it opened.
type browserPage struct {
	t     *testing.T
	ctx   context.Context
	shots string

	mu       sync.Mutex
	console  []string // every message, for the failure report
	problems []string // exceptions and policy violations: a failure
	dialogs  []string
}

// newBrowserPage starts a headless Chromium for t, closed at its end.
// Uncaught exceptions, Content-Security-Policy violations and dialogs
// fail t when it ends.
func newBrowserPage(t *testing.T) *browserPage {
	t.Helper()
	exe := testenv.Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // the tests run as root, where Chromium's own sandbox cannot start
		chromedp.WindowSize(1360, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	p := &browserPage{t: t, ctx: ctx, shots: os.Getenv("CRUCIBLE_SCREENSHOTS")}
	if p.shots == "" {
		p.shots = t.TempDir()
	}
	if err := os.MkdirAll(p.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	messages := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bound to ctx
		t.Fatalf("start %s: %v", exe, err)
	}
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			s := fmt.Sprintf("%s %s:%d %s", m.Type, m.URL, m.Line+1, m)
			p.mu.Lock()
			p.console = append(p.console, s)
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				p.problems = append(p.problems, s)
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.dialogs = append(p.dialogs, string(ev.Type)+": "+ev.Message)
			p.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, s := range p.problems {
			t.Errorf("the page reported: %s", s)
		}
		for _, d := range p.dialogs {
			t.Errorf("the page opened a dialog: %s", d)
		}
		if t.Failed() && len(p.console) > 0 {
			t.Logf("the page's console:\n%s", strings.Join(p.console, "\n"))
		}
	})
	return p
}

// do runs browser actions, failing the test on error.
func (p *browserPage) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, uiStepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.fail(what, err)
	}
}

// fail fails the test with what the page shows, and a screenshot.
func (p *browserPage) fail(what string, err error) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	p.screenshot("failure-" + strings.ReplaceAll(p.t.Name(), "/", "-"))
	p.t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, text)
}

// waitFor waits until the JavaScript expression cond is truthy.
func (p *browserPage) waitFor(what, cond string) {
	p.t.Helper()
	p.do(what, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(uiStepTimeout), chromedp.WithPollingInterval(50*time.Millisecond)))
}

// eval returns the value of a JavaScript expression, awaited if a promise.
func eval[T any](p *browserPage, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, uiStepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.fail("evaluate "+expr, err)
	}
	return v
}

// screenshot saves the viewport as NAME.png in the screenshot directory.
func (p *browserPage) screenshot(name string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(p.shots, name+".png")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		p.t.Errorf("screenshot %s: %v", name, err)
	}
	p.t.Logf("screenshot: %s", path)
	return path
}

// allowDownloads saves the page's downloads in dir, under their names.
func (p *browserPage) allowDownloads(dir string) {
	p.t.Helper()
	_, err := chromedp.CallBrowser(p.ctx, browser.SetDownloadBehavior,
		browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
	if err != nil {
		p.t.Fatalf("allow downloads: %v", err)
	}
}

// js quotes s as a JavaScript string literal.
func js(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
