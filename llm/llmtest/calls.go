package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Call is one tool call a scripted model makes: the tool's name and its
// arguments (encoded as JSON).
type Call struct {
	Name string
	Args any
}

// Calls is a scripted model that makes one tool call a turn: a request
// whose conversation holds n replies of the assistant already is
// answered with calls[n] (the last again once they are used up), in the
// OpenAI chat-completions wire format, as a model driving an agent's
// tools does (the software-engineering agent's bash, view, edit,
// submit...). The turn is read from the conversation, so one server
// serves any number of runs, one after another or at once. Requests must
// carry key when it is set.
type Calls struct {
	*httptest.Server

	mu       sync.Mutex
	requests [][]byte
}

// OpenAICalls starts a Calls server, closed when tb ends; its base URL
// for an OpenAI-compatible client is the server's URL + "/v1".
func OpenAICalls(tb testing.TB, key string, calls ...Call) *Calls {
	tb.Helper()
	if len(calls) == 0 {
		tb.Fatal("llmtest.OpenAICalls: no calls")
	}
	c := &Calls{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		var body json.RawMessage
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		n := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		c.mu.Lock()
		c.requests = append(c.requests, body)
		c.mu.Unlock()
		call := calls[min(n, len(calls)-1)]
		args, err := json.Marshal(call.Args)
		if err != nil {
			http.Error(w, `{"error":{"message":"bad script"}}`, http.StatusInternalServerError)
			return
		}
		message := map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
			"id": fmt.Sprintf("call_%d", n+1), "type": "function", "function": map[string]any{"name": call.Name, "arguments": string(args)}}}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
			"choices": []map[string]any{{"index": 0, "finish_reason": "tool_calls", "message": message}},
			"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	tb.Cleanup(c.Server.Close)
	return c
}

// Requests returns the bodies of the requests received so far.
func (c *Calls) Requests() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.requests...)
}
