package analyst

// The harness of the analyst's end-to-end tests. No language model can
// run here, so the model is SCRIPTED: a local httptest server speaks
// OpenAI's chat-completions wire format and answers each coder request
// from a script (a function of what the model received, so tests can
// assert what it was shown), while the real llm client (llm.New) talks to
// it and a real session of the data-science image runs the code. The
// verifier, told apart by its system prompt, accepts every answer.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/llm"
)

// wireMessage is a message as the scripted model received it.
type wireMessage struct {
	Role       string
	Text       string
	ToolCallID string
	Calls      []wireCall
}

// wireCall is a tool call, its arguments as JSON text.
type wireCall struct{ ID, Name, Args string }

// modelRequest is one coder request the scripted model received.
type modelRequest struct {
	System   string
	Messages []wireMessage // without the system prompt
}

// last is the request's last message.
func (r modelRequest) last() wireMessage { return r.Messages[len(r.Messages)-1] }

// modelReply is a scripted reply: text and/or tool calls.
type modelReply struct {
	Text  string
	Calls []wireCall
}

// coderTurn answers one coder request. It may t.Errorf, never t.Fatal
// (it runs on the server's goroutine).
type coderTurn func(t testing.TB, req modelRequest) modelReply

// run answers with one execute_code call of code.
func run(code string) coderTurn { return call("execute_code", map[string]string{"code": code}) }

// finalAnswer answers with one final_answer call.
func finalAnswer(answer string) coderTurn {
	return call("final_answer", map[string]string{"answer": answer})
}

func call(name string, args map[string]string) coderTurn {
	b, _ := json.Marshal(args)
	return func(testing.TB, modelRequest) modelReply {
		return modelReply{Calls: []wireCall{{Name: name, Args: string(b)}}}
	}
}

// seeing runs check on the request, then answers as next does.
func seeing(check func(t testing.TB, req modelRequest), next coderTurn) coderTurn {
	return func(t testing.TB, req modelRequest) modelReply {
		check(t, req)
		return next(t, req)
	}
}

// scriptedModel is the local server playing the model.
type scriptedModel struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	turns    []coderTurn
	coder    []modelRequest // every coder request, in order
	verifies int
	ids      int
}

// newScriptedModel starts a scripted model answering the coder with
// turns (more can be added with script), closed when t ends.
func newScriptedModel(t testing.TB, turns ...coderTurn) *scriptedModel {
	m := &scriptedModel{t: t, turns: turns}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// script adds coder turns, for the next question.
func (m *scriptedModel) script(turns ...coderTurn) {
	m.mu.Lock()
	m.turns = append(m.turns, turns...)
	m.mu.Unlock()
}

// requests returns the coder requests received so far.
func (m *scriptedModel) requests() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelRequest(nil), m.coder...)
}

// provider is the real OpenAI client, pointed at the server.
func (m *scriptedModel) provider() llm.Provider {
	m.t.Helper()
	p, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted-model", APIKey: "test-key",
		BaseURL: m.srv.URL + "/v1", Timeout: 10 * time.Second, MaxRetries: 1})
	if err != nil {
		m.t.Fatalf("llm.New: %v", err)
	}
	return p
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, err := parseRequest(body)
	if err != nil {
		m.t.Errorf("scripted model: request %s: %v", body, err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var reply modelReply
	m.mu.Lock()
	switch {
	case strings.HasPrefix(req.System, "You check an agent's work"):
		m.verifies++
		reply = modelReply{Text: `{"ok": true, "reason": "the output answers the question"}`}
	case len(m.coder) < len(m.turns):
		next := m.turns[len(m.coder)]
		m.coder = append(m.coder, req)
		m.mu.Unlock()
		reply = next(m.t, req)
		m.mu.Lock()
	default:
		m.coder = append(m.coder, req)
		m.t.Errorf("scripted model: coder request %d is not in the script; last message %q", len(m.coder), req.last().Text)
		m.mu.Unlock()
		http.Error(w, "not in the script", http.StatusBadRequest)
		return
	}
	body = m.body(reply)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// body is a chat.completion object for reply. m.mu is held.
func (m *scriptedModel) body(reply modelReply) []byte {
	msg := map[string]any{"role": "assistant", "content": nil}
	if reply.Text != "" {
		msg["content"] = reply.Text
	}
	finish := "stop"
	if len(reply.Calls) > 0 {
		var calls []any
		for _, c := range reply.Calls {
			m.ids++
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", m.ids), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"], finish = calls, "tool_calls"
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1700000000, "model": "scripted-model",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return b
}

// parseRequest reads an OpenAI chat-completions request.
func parseRequest(body []byte) (modelRequest, error) {
	var in struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	var req modelRequest
	if err := json.Unmarshal(body, &in); err != nil || len(in.Messages) == 0 {
		return req, fmt.Errorf("not a chat request (%v)", err)
	}
	for _, msg := range in.Messages {
		text := contentText(msg.Content)
		if msg.Role == "system" {
			req.System += text
			continue
		}
		out := wireMessage{Role: msg.Role, Text: text, ToolCallID: msg.ToolCallID}
		for _, tc := range msg.ToolCalls {
			out.Calls = append(out.Calls, wireCall{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, out)
	}
	return req, nil
}

// contentText reads OpenAI content: a string or an array of text parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
