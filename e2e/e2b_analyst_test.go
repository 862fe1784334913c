package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/llm/llmtest"
)

// chatRequest is what the test reads of a chat-completions request the
// agent sent.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// recordingModel starts llmtest's scripted OpenAI-compatible server for
// script behind a proxy that records every request's body; it returns the
// base URL for an OpenAI client (…/v1) and the requests seen so far.
func recordingModel(t *testing.T, script llmtest.Script) (baseURL string, seen func() []chatRequest) {
	t.Helper()
	model := llmtest.OpenAI(t, script)
	target, err := url.Parse(model.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var reqs []chatRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req chatRequest
		if err := json.Unmarshal(body, &req); err != nil || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("the agent sent %s %s %s, want a chat-completions request (%v)", r.Method, r.URL.Path, clip(body), err)
		}
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []chatRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]chatRequest(nil), reqs...)
	}
}

// TestE2BDataAnalysisAgent runs the seed's DataAnalysisAgent, ported to
// JavaScript on E2B's official @e2b/code-interpreter
// (tools/e2b-client/tests/e2e/analyst.mjs), against a real `crucible serve`:
// it profiles the data in the sandbox, asks the model for pandas code,
// runs it and, on an error, sends execution.error.value back and retries.
// No language model can run where the tests run: the model is a local
// server speaking OpenAI's chat-completions wire format
// (llm/llmtest.OpenAI), scripted to answer first code with a wrong column
// name (a KeyError in the sandbox), then fixed code that prints the top
// five products and leaves a bar chart open. The test checks that the
// profile reached the model, that the retry happened with the error's
// text sent back, and the final output and PNG chart.
func TestE2BDataAnalysisAgent(t *testing.T) {
	e := startE2BServer(t)
	const apiKey = "sk-scripted-model"
	// The fixed code leaves its chart open, as Jupyter shows it; a chart
	// saved with plt.savefig, as the seed's prompt asks, is
	// TestE2BSDK/rich_results' case.
	buggy := "top = df.groupby('product')['revenu'].sum().nlargest(5)\nprint(top)"
	fixed := strings.Join([]string{
		"import matplotlib.pyplot as plt",
		"top = df.groupby('product')['revenue'].sum().nlargest(5)",
		"print(top.to_string())",
		"ax = top.plot(kind='bar', title='Top 5 products by revenue')",
		"top.index.tolist()",
	}, "\n")
	baseURL, seen := recordingModel(t, llmtest.Script{Key: apiKey, Codes: []string{buggy, fixed}})

	var got struct {
		Result struct {
			Code    string   `json:"code"`
			Output  *string  `json:"output"`
			Charts  []string `json:"charts"`
			Stdout  string   `json:"stdout"`
			Attempt int      `json:"attempt"`
			Error   string   `json:"error"`
		} `json:"result"`
		Schema       string `json:"schema"`
		Conversation []struct {
			Role, Content string
		} `json:"conversation"`
	}
	e.runScript(t, "tests/e2e/analyst.mjs", e.e2bEnv(e.AliceE2B, "OPENAI_BASE_URL="+baseURL, "OPENAI_API_KEY="+apiKey), 3*time.Minute, &got)

	reqs := seen()
	if len(reqs) != 2 {
		t.Fatalf("the model was asked %d times, want 2 (the buggy code, then the fix)", len(reqs))
	}
	system := reqs[0].Messages[0]
	if system.Role != "system" || !strings.Contains(system.Content, "Dataset schema:") ||
		!strings.Contains(system.Content, `"revenue": "float64"`) || !strings.Contains(system.Content, `"shape": [`) {
		t.Errorf("the first request's system message does not carry the profile of the data:\n%s", system.Content)
	}
	if reqs[0].Model != "gpt-4o" {
		t.Errorf("model %q, want the seed's gpt-4o", reqs[0].Model)
	}
	second := reqs[1].Messages
	last := second[len(second)-1]
	if last.Role != "user" || !strings.HasPrefix(last.Content, "The code raised an error:\n") ||
		!strings.Contains(last.Content, "revenu") || !strings.HasSuffix(last.Content, "\nPlease fix it.") {
		t.Errorf("the retry's last message %+v, want the sandbox's KeyError text sent back", last)
	}
	t.Logf("sent back to the model: %q", last.Content)
	if got.Result.Error != "" || got.Result.Attempt != 2 {
		t.Fatalf("the agent's result: %+v, want success at attempt 2", got.Result)
	}
	if strings.TrimSpace(got.Result.Code) != fixed {
		t.Errorf("the code kept %q, want the fixed code", got.Result.Code)
	}
	// Revenue by product: gamma 2700, alpha 1920, zeta 1350, epsilon 900, delta 600.
	top := regexp.MustCompile(`(?s)gamma\s+2700\.0\s+alpha\s+1920\.0\s+zeta\s+1350\.0\s+epsilon\s+900\.0\s+delta\s+600\.0`)
	if !top.MatchString(got.Result.Stdout) {
		t.Errorf("the fixed code's stdout is not the top five by revenue:\n%s", got.Result.Stdout)
	}
	if got.Result.Output == nil || *got.Result.Output != "['gamma', 'alpha', 'zeta', 'epsilon', 'delta']" {
		t.Errorf("output (execution.text) %v, want the last expression's value", got.Result.Output)
	}
	if len(got.Result.Charts) != 1 {
		t.Fatalf("%d charts, want the bar chart left open", len(got.Result.Charts))
	}
	checkPNG(t, "the agent's chart", got.Result.Charts[0])
}
