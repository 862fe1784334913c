package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
)

// TestUIAnalysisRebuilt: the web UI's analysis view when the analysis's
// session has ended (closed here, as its idle expiry or a restart ends
// it): it says no session is open; a question asked on the page rebuilds
// it, its progress says so, and the view shows "The session was rebuilt
// from the stored datasets and 1 cell", live and after a reload; the
// answer uses the variable the replayed cell defined.
func TestUIAnalysisRebuilt(t *testing.T) {
	const key = "sk-scripted-model-key-rebuilt-0123"
	model := llmtest.OpenAI(t, llmtest.Script{Key: key, FromPrompt: true, Codes: []string{"print('unscripted')"}, Answer: "unscripted"})
	t.Setenv("CRUCIBLE_TEST_MODEL_KEY", key)
	srv := analystServer(t, fmt.Sprintf(`"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}`, model.URL+"/v1"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, err := srv.Client.CreateAnalysis(ctx, api.AnalysisRequest{Image: "datascience",
		Datasets: []api.AnalysisDataset{{Name: "points.csv", Content: []byte("x,y\n0,10\n1,20\n2,30\n3,40\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	q1, err := srv.Client.Ask(ctx, a.ID, api.QuestionRequest{Question: "Keep x above 1. [[code]]df2 = df[df.x > 1]\nprint(len(df2))[[/code]] [[answer]]2 rows.[[/answer]]"}, nil)
	if err != nil || q1.Run.Status != "answered" {
		t.Fatalf("question 1: %v", err)
	}
	if r := srv.do(t, "DELETE", "/v1/sessions/"+a.SessionID, "", nil); r.Status != http.StatusNoContent {
		t.Fatalf("close the analysis's session: %d %s", r.Status, clip(r.Body))
	}

	p := newBrowserPage(t)
	p.do("open the analysis", chromedp.Navigate(srv.URL+"/#/analyses/"+a.ID))
	p.waitFor("the analysis without a session", `(document.querySelector('.session-status') || {}).textContent?.includes('no session open')`)
	if eval[bool](p, `!document.querySelector('.rebuilt-note').hidden`) {
		t.Errorf("the note says the session was rebuilt before any rebuild")
	}
	item := p.ask(2, "How many rows in df2? [[code]]print(len(df2), int(df2.y.sum()))[[/code]] [[answer]]df2 has 2 rows; y sums to 70.[[/answer]]", false)
	p.waitFor("question 2 answered", item+`.dataset.state === 'answered'`)
	const note = `The session was rebuilt from the stored datasets and 1 cell `
	p.waitFor("the note, live", `(document.querySelector('.rebuilt-note:not([hidden])') || {}).textContent?.includes(`+js(note)+`)`)
	if steps := p.text(item, ".step"); !strings.Contains(steps, "The session had ended: a new one was opened, the datasets loaded and 1 cell replayed") {
		t.Errorf("question 2's progress does not say the session was rebuilt:\n%s", steps)
	}
	if out := p.text(item, ".answer"); !strings.Contains(out, "2 70") {
		t.Errorf("question 2's answer does not show the output of df2 (2 70):\n%s", out)
	}
	p.do("reload", chromedp.Reload())
	p.waitFor("the note, after a reload", `(document.querySelector('.rebuilt-note:not([hidden])') || {}).textContent?.includes(`+js(note)+`)`)
	got, err := srv.Client.GetAnalysis(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if status := p.text("document", ".session-status"); got.SessionID == "" || !strings.Contains(status, "session "+got.SessionID) {
		t.Errorf("the session line after the rebuild: %q; want the new session %q", status, got.SessionID)
	}
}
