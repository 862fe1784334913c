// Package llmtest stands in for a language model in tests: a local HTTP
// server speaking the OpenAI chat-completions wire format from a script.
// No model can run where the tests run; the script replays what a model
// following the agent's text-mode format says.
package llmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Script is what the scripted model says. It tells the agent's roles
// apart by their system prompt, as agent/scripted_test.go does: the
// planner is told the task needs code, the verifier accepts, and the
// coder (text mode) sends the next of Codes in a fence (the last one
// again once they are used up), and Answer once a program has run.
type Script struct {
	// Key, if set, is the API key every request must carry (401
	// otherwise).
	Key string
	// Codes are the programs the coder sends, in order.
	Codes []string
	// Answer is the final answer.
	Answer string
}

// OpenAI starts a server replaying s, closed when tb ends; its base URL
// for an OpenAI-compatible client is the server's URL + "/v1".
func OpenAI(tb testing.TB, s Script) *httptest.Server {
	tb.Helper()
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		var reply string
		switch system, last := req.Messages[0].Content, req.Messages[len(req.Messages)-1].Content; {
		case strings.HasPrefix(system, "You decide whether"):
			reply = `{"needs_code": true, "answer": ""}`
		case strings.HasPrefix(system, "You check an agent's work"):
			reply = `{"ok": true, "reason": "the output answers the task"}`
		case strings.Contains(last, "The code ran:"):
			reply = "FINAL ANSWER: " + s.Answer
		default:
			mu.Lock()
			code := s.Codes[min(next, len(s.Codes)-1)]
			next++
			mu.Unlock()
			reply = "```python\n" + code + "\n```"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply}}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	tb.Cleanup(srv.Close)
	return srv
}
