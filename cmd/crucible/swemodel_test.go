package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// sweCall is one tool call a scripted software-engineering model makes.
type sweCall struct {
	name string
	args any
}

// scriptedSWEModel is a local server speaking the OpenAI chat-completions
// wire format with native tool calls, standing in for a model (none can
// run here): its n-th reply (n = the assistant messages the request
// already holds) is calls[n] as a tool call, the last one again once they
// are used up. key, if set, is the API key every request must carry.
func scriptedSWEModel(t *testing.T, key string, calls []sweCall) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
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

// fixerCalls view the buggy file, replace old by new in it, run the tests
// and submit.
func fixerCalls(file, old, new string) []sweCall {
	return []sweCall{
		{"view", map[string]any{"path": file}},
		{"edit", map[string]any{"command": "str_replace", "path": file, "old_str": old, "new_str": new}},
		{"run_tests", map[string]any{}},
		{"submit", map[string]any{}},
	}
}
