package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
)

// TestUIAnalystNoFlags is the new user's path of issue 25: `crucible
// serve` with no flag but those that place it (--addr, --db, --socket),
// where the data-science image is built; the model comes from the
// environment (CRUCIBLE_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY), a local
// server speaking the OpenAI wire format from a script (llmtest.OpenAI).
// In Chromium, the Analyst view offers the datascience image first; a
// small CSV uploaded through its form becomes an analysis in that image
// whose profile shows; a question gets its answer. Before, the form
// chose the host image and the page said "The analysis could not be
// created: internal server error".
func TestUIAnalystNoFlags(t *testing.T) {
	crucibleBinary(t)
	testenv.Image(t, "datascience")
	const key = "sk-scripted-model-key-no-flags-0123"
	model := llmtest.OpenAI(t, llmtest.Script{Key: key, Answer: "The total amount is 42.", Codes: []string{"print(df['amount'].sum())"}})
	t.Setenv("CRUCIBLE_PROVIDER", "openai")
	t.Setenv("CRUCIBLE_MODEL", "scripted")
	t.Setenv("OPENAI_BASE_URL", model.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", key)
	csv := filepath.Join(t.TempDir(), "sales.csv")
	if err := os.WriteFile(csv, []byte("region,amount\nnorth,10\nsouth,32\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServerPlaced(t, "server", filepath.Join(t.TempDir(), "runs.db"))
	p := newBrowserPage(t)

	p.do("open the UI", chromedp.Navigate(srv.URL+"/"))
	p.waitFor("the Analyst view", `location.hash === '#/analyses' && document.querySelector('#an-image option[value="datascience"]')`)
	if got := eval[string](p, `document.getElementById('an-image').value`); got != "datascience" {
		t.Errorf("the upload form's image is %q, want datascience, the server's image for analyses", got)
	}
	p.uploadAnalysis(csv)
	profile := `document.querySelector('.profile-table[data-table="sales"]')`
	for what, cond := range map[string]string{
		"the shape":   profile + `.textContent.includes('2 rows × 2 columns')`,
		"the columns": `Array.from(` + profile + `.querySelectorAll('table.columns tbody th')).map(e => e.textContent).join() === 'region,amount'`,
		"the image":   `document.querySelector('.session-status').textContent.includes('image datascience')`,
	} {
		if !eval[bool](p, cond) {
			t.Errorf("the analysis: %s: false (%s)", what, cond)
		}
	}

	q := p.ask(1, "What is the total amount?", false)
	p.waitFor("the answer", q+`.dataset.state === 'answered' && `+q+`.querySelector('.answer-text')`)
	if got := p.text(q, ".answer-text"); got != "The total amount is 42." {
		t.Errorf("the answer shows %q", got)
	}
	if got := p.text(q, "details.answer-code pre"); got != "42\n" {
		t.Errorf("the answer's output shows %q, want 42", got)
	}
}
