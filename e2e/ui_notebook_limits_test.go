package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUINotebookLimits drives the notebook's new-session form in
// Chromium against `crucible serve`: the timeout and memory fields show
// the sessions' defaults the server states (60 s, 2 GiB); the session
// opened with other values gets them (the API says so, and the
// notebook's status line); a cell that runs out of memory shows
// memory_limit and why, and the next cell runs in the restarted
// interpreter, its variables gone, its files kept.
func TestUINotebookLimits(t *testing.T) {
	crucibleBinary(t)
	p := newBrowserPage(t)
	srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"))

	p.do("open the UI", chromedp.Navigate(srv.URL+"/#/notebook"))
	p.waitFor("the session form with the defaults", `document.querySelector('#nb-image option') && document.querySelector('#nb-timeout').value !== ''`)
	if got := eval[string](p, `document.querySelector('#nb-timeout').value + ' s, ' + document.querySelector('#nb-memory').value + ' GiB'`); got != "60 s, 2 GiB" {
		t.Errorf("the form's defaults: %s, want 60 s, 2 GiB", got)
	}
	eval[chromedp.Void](p, `(() => { document.querySelector('#nb-timeout').value = '5'; document.querySelector('#nb-memory').value = '0.25'; })()`)
	p.do("new session", chromedp.Click(chromedp.CSS(`form[aria-label="New session"] button`)))
	p.waitFor("the notebook", `location.hash.startsWith('#/notebook/ses') && document.querySelector('.cell textarea')`)
	sid := strings.TrimPrefix(eval[string](p, `location.hash`), "#/notebook/")

	r := srv.do(t, "GET", "/v1/sessions/"+sid, "", nil)
	var info struct {
		Limits struct {
			WallTimeMS  int64 `json:"wall_time_ms"`
			CPUTimeMS   int64 `json:"cpu_time_ms"`
			MemoryBytes int64 `json:"memory_bytes"`
		} `json:"limits"`
		Restarts int `json:"restarts"`
	}
	if err := json.Unmarshal(r.Body, &info); err != nil {
		t.Fatalf("GET the session: %d %s", r.Status, r.Body)
	}
	if l := info.Limits; l.WallTimeMS != 5000 || l.CPUTimeMS != 5000 || l.MemoryBytes != 256<<20 {
		t.Errorf("the session opened from the form has %+v, want 5 s of wall and CPU time and 256 MiB", l)
	}
	if got := eval[string](p, `document.querySelector('.session-status').textContent`); !strings.Contains(got, "5 s per cell · 256 MiB") {
		t.Errorf("the status line %q does not show the limits", got)
	}

	p.runCell(0, "x = 42\nopen('kept.txt', 'w').write('kept')")
	p.runCell(1, "chunks = []\nwhile True:\n    chunks.append(bytes(1 << 20))")
	if got := p.cellText(1, ".cell-status"); !strings.Contains(got, "memory_limit") || !strings.Contains(got, "restarted") ||
		!strings.Contains(got, "every variable") {
		t.Errorf("the cell out of memory says %q; want memory_limit and that the interpreter was restarted and the variables lost", got)
	}
	p.runCell(2, "print('x' in globals(), open('kept.txt').read())")
	if got := p.cellText(2, ".stdout"); got != "False kept\n" {
		t.Errorf("the cell after the restart printed %q, want a fresh interpreter and the file kept", got)
	}
	p.waitFor("the status line to count the restart", `document.querySelector('.session-status').textContent.includes('restarted 1×')`)
	r = srv.do(t, "GET", "/v1/sessions/"+sid, "", nil)
	if err := json.Unmarshal(r.Body, &info); err != nil || info.Restarts != 1 {
		t.Errorf("the API says %d restarts (%v), want 1: %s", info.Restarts, err, r.Body)
	}
}
