package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestServeAnalyses drives a data analysis through a real `crucible serve
// --image datascience` (root, and the image built): DABench's
// insurance.csv uploaded with the SDK, its profile read, a question whose
// code prints the mean and draws a chart, a follow-up that uses what the
// first defined, and the chart downloaded. The model is scripted: a local
// server speaking the OpenAI wire format from a script (llmtest.OpenAI),
// as no model can run here.
func TestServeAnalyses(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	csv := testenv.Dataset(t, "dabench/tables/insurance.csv")
	const key = "sk-scripted-model-key-0123456789"
	model := llmtest.OpenAI(t, llmtest.Script{Key: key, Answer: "see the output",
		Codes: []string{
			"import matplotlib.pyplot as plt\nmean = df['charges'].mean()\nprint('mean charges', round(mean, 2))\nplt.figure()\ndf['charges'].hist()\nplt.title('Charges')\nplt.xlabel('charges')",
			"print('rows above the mean', int((df['charges'] > mean).sum()))",
		}})
	c, _ := startServe(t, "datascience", fmt.Sprintf(`{"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}}`, model.URL+"/v1"),
		"CRUCIBLE_TEST_MODEL_KEY="+key)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	f, err := os.Open(csv)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := c.UploadAnalysis(ctx, []client.Upload{{Name: "insurance.csv", Content: f}}, "", sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var p analyst.Profile
	if err := json.Unmarshal(a.Profile, &p); err != nil || len(p.Tables) != 1 || p.Tables[0].Rows != 1338 || p.DF != "insurance" {
		t.Fatalf("profile: %v, %s", err, a.Profile)
	}
	if !strings.Contains(a.ProfileText, "charges") {
		t.Errorf("profile text lacks the column charges:\n%s", a.ProfileText)
	}

	first, err := c.Ask(ctx, a.ID, api.QuestionRequest{Question: "What is the mean of charges? Plot their distribution.", TextMode: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ans analyst.Answer
	if err := json.Unmarshal(first.Answer, &ans); err != nil {
		t.Fatal(err)
	}
	if first.Run.Status != "answered" || !strings.Contains(ans.Output, "mean charges 13270.42") || len(ans.Charts) != 1 || ans.Charts[0].Title != "Charges" {
		t.Fatalf("first question: %s, %s", first.Run.Status, first.Answer)
	}
	second, err := c.Ask(ctx, a.ID, api.QuestionRequest{Question: "How many rows are above that mean?", TextMode: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.N != 2 || second.Run.Status != "answered" || !strings.Contains(string(second.Answer), "rows above the mean 420") {
		t.Fatalf("the follow-up: %s, %s", second.Run.Status, second.Answer)
	}
	png, err := c.AnalysisFile(ctx, a.ID, ans.Charts[0].Name, 1)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("the chart: %v, %d bytes", err, len(png))
	}
	if err := c.DeleteAnalysis(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
}
