// Package llmtest stands in for a language model in tests: a local HTTP
// server speaking the OpenAI chat-completions wire format from a script.
// No model can run where the tests run; the script replays what a model
// following the agent's formats says: fenced code in text mode, or
// execute_code and final_answer calls in native tool-calling mode.
package llmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Script is what the scripted model says. It tells the agent's roles
// apart by their system prompt, as agent/scripted_test.go does: the
// planner is told the task needs code, the verifier accepts, and the
// coder sends the next of Codes (the last one again once they are used
// up), and Answer once a program has run. In text mode (a request
// without tools) the code comes in a fence and the answer after "FINAL
// ANSWER:"; with tools, as an execute_code call and, once that call's
// result came back, a final_answer call.
type Script struct {
	// Key, if set, is the API key every request must carry (401
	// otherwise).
	Key string
	// Codes are the programs the coder sends, in order.
	Codes []string
	// Answer is the final answer.
	Answer string
	// FromPrompt makes the conversation the script, so that a client
	// (an SDK's tests) can script each agent run or question through its
	// own text: the last message holding "[[code]]...[[/code]]" blocks
	// gives the programs (the n-th program sent after that message is
	// the n-th block, the last again once they are used up) and its
	// "[[answer]]...[[/answer]]" the final answer. Codes and Answer are
	// used when no message holds a block.
	FromPrompt bool
}

// request is what the server reads of a chat-completions request.
type request struct {
	Messages []struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []json.RawMessage `json:"tools"`
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
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		codes, answer := s.Codes, s.Answer
		sent := func() int { mu.Lock(); defer mu.Unlock(); n := next; next++; return n }
		if s.FromPrompt {
			if c, a, n, ok := scriptIn(req); ok {
				codes, answer, sent = c, a, func() int { return n }
			}
		}
		nextCode := func() string { return codes[min(sent(), len(codes)-1)] }
		message := map[string]any{"role": "assistant"}
		finish := "stop"
		switch system, last := req.Messages[0].Content, req.Messages[len(req.Messages)-1]; {
		case strings.HasPrefix(system, "You decide whether"):
			message["content"] = `{"needs_code": true, "answer": ""}`
		case strings.HasPrefix(system, "You check an agent's work"):
			message["content"] = `{"ok": true, "reason": "the output answers the task"}`
		case len(req.Tools) > 0:
			call, args := "execute_code", map[string]string{"code": ""}
			if last.Role == "tool" && answered(req, "execute_code") {
				call, args = "final_answer", map[string]string{"answer": answer}
			} else {
				args["code"] = nextCode()
			}
			b, _ := json.Marshal(args)
			message["tool_calls"] = []map[string]any{{"id": "call_" + call, "type": "function",
				"function": map[string]any{"name": call, "arguments": string(b)}}}
			finish = "tool_calls"
		case strings.Contains(last.Content, "The code ran:"):
			message["content"] = "FINAL ANSWER: " + answer
		default:
			message["content"] = "```python\n" + nextCode() + "\n```"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
			"choices": []map[string]any{{"index": 0, "finish_reason": finish, "message": message}},
			"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// answered reports whether the last assistant message of req called the
// tool name: the tool results that follow it are that call's.
func answered(req request, name string) bool {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "assistant" {
			return len(m.ToolCalls) > 0 && m.ToolCalls[0].Function.Name == name
		}
	}
	return false
}

// blockRE matches a script block of FromPrompt: [[code]]...[[/code]] or
// [[answer]]...[[/answer]].
var blockRE = regexp.MustCompile(`(?s)\[\[(code|answer)\]\](.*?)\[\[/(?:code|answer)\]\]`)

// scriptIn finds the script of FromPrompt in req: the programs and the
// answer of the last message holding a [[code]] block, and how many
// programs the assistant sent after that message (tool calls of
// execute_code, or fenced code). ok is false when no message holds one.
func scriptIn(req request) (codes []string, answer string, sent int, ok bool) {
	at := -1
	for i := len(req.Messages) - 1; i >= 0 && at < 0; i-- {
		for _, m := range blockRE.FindAllStringSubmatch(req.Messages[i].Content, -1) {
			if m[1] == "code" {
				at = i
				break
			}
		}
	}
	if at < 0 {
		return nil, "", 0, false
	}
	for _, m := range blockRE.FindAllStringSubmatch(req.Messages[at].Content, -1) {
		if m[1] == "code" {
			codes = append(codes, strings.Trim(m[2], "\n"))
		} else {
			answer = strings.TrimSpace(m[2])
		}
	}
	for _, m := range req.Messages[at+1:] {
		if m.Role == "assistant" && (len(m.ToolCalls) > 0 && m.ToolCalls[0].Function.Name == "execute_code" || strings.Contains(m.Content, "```")) {
			sent++
		}
	}
	return codes, answer, sent, true
}
