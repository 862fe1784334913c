package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// scriptedOpenAI is a local server speaking the OpenAI chat-completions
// wire format, standing in for a model (none can run here). It tells the
// agent's roles apart by their system prompt, as agent/scripted_test.go
// does: the planner asks for code, the verifier accepts, and the coder
// sends code in text mode, then answers once the code has run.
func scriptedOpenAI(t *testing.T, code, answer string) *httptest.Server {
	return scriptedOpenAIVerdict(t, code, answer, `{"ok": true, "reason": "the output answers the task"}`)
}

// scriptedOpenAIVerdict is scriptedOpenAI whose verifier always replies
// verdict.
func scriptedOpenAIVerdict(t *testing.T, code, answer, verdict string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		reply := "```python\n" + code + "\n```"
		switch system := req.Messages[0].Content; {
		case strings.HasPrefix(system, "You decide whether"):
			reply = "CODE"
		case strings.HasPrefix(system, "You check an agent's work"):
			reply = verdict
		case strings.Contains(req.Messages[len(req.Messages)-1].Content, "The code ran:"):
			reply = "FINAL ANSWER: " + answer
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply}}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// With no --image, `crucible agent` runs the model's code in the
// data-science image when it is built: the model's `import pandas` works at
// the first attempt, and the summary counts that one attempt as the
// progress lines number it. Needs root and the built image (scripts/setup.sh
// builds it).
func TestAgentDefaultsToDataScienceImage(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	model := scriptedOpenAI(t, "import pandas\nprint('pandas', pandas.__version__)", "pandas is importable")
	cmd := exec.Command(os.Args[0], "agent", "--provider", "openai", "--base-url", model.URL+"/v1",
		"--api-key", "test", "--model", "scripted", "--text-mode", "--max-retries", "0",
		"--db", filepath.Join(t.TempDir(), "runs.db"), "--out", t.TempDir(), "import pandas and print its version")
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("crucible agent: %v\n%s", err, out)
	}
	for _, want := range []string{"image datascience", "answer:\npandas is importable", "output:\npandas ", "attempts 1/1 (0 failed)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A verifier that answers in prose with no verdict: `crucible agent`
// prints the answer marked UNVERIFIED, with the status and its reason, and
// exits 0 (there is an answer), having spent no attempt on it. Needs root
// (the native sandbox); runs on the host's directories.
func TestAgentUnverifiedAnswer(t *testing.T) {
	testenv.Root(t)
	model := scriptedOpenAIVerdict(t, "print(6*7)", "42", "The code multiplies the two numbers and prints the product.")
	cmd := exec.Command(os.Args[0], "agent", "--provider", "openai", "--base-url", model.URL+"/v1",
		"--api-key", "test", "--model", "scripted", "--text-mode", "--image", image.Host,
		"--db", filepath.Join(t.TempDir(), "runs.db"), "--out", t.TempDir(), "What is 6 times 7?")
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("crucible agent: %v\n%s", err, out)
	}
	for _, want := range []string{
		"status: unverified (the verifier's reply could not be read, twice)",
		"answer (UNVERIFIED: not checked by the verifier):\n42",
		"asking the verifier again",
		"attempts 1/4 (0 failed)",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
