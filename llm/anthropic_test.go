package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// These tests use the fake servers of openai_test.go: the model is
// scripted and each request is checked.

// antRequest is the part of a messages request the tests check.
type antRequest struct {
	Model     string
	MaxTokens int `json:"max_tokens"`
	System    []struct{ Type, Text string }
	Messages  []struct {
		Role    string
		Content []struct {
			Type, Text, ID, Name string
			Input                json.RawMessage
			ToolUseID            string `json:"tool_use_id"`
			Content              []struct{ Type, Text string }
		}
	}
	Tools []struct {
		Name, Description string
		InputSchema       json.RawMessage `json:"input_schema"`
	}
}

func decodeAnt(t *testing.T, r *http.Request, body []byte) antRequest {
	t.Helper()
	// SDK v2 speaks API version 2026-10-21, which sends the key as a
	// bearer token rather than in x-api-key.
	if got := r.Header.Get("Authorization"); got != "Bearer ant-test" {
		t.Errorf("Authorization = %q, want Bearer ant-test", got)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	var req antRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Errorf("request body %s: %v", body, err)
	}
	return req
}

func newTestAnthropic(url string) *anthropicProvider {
	p := newAnthropic(Config{Provider: ProviderAnthropic, Model: "claude-test", BaseURL: url, APIKey: "ant-test", Timeout: testTimeout})
	p.retry = fastRetry()
	return p
}

const antText = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-20260101",
 "content":[{"type":"text","text":"Hello"},{"type":"text","text":" there."}],
 "stop_reason":"end_turn","stop_sequence":null,
 "usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":4}}`

// The scripted model answers a plain question with two text blocks.
func TestAnthropicText(t *testing.T) {
	srv := newFakeServer(t, "/v1/messages", scripted{body: antText, check: func(t *testing.T, r *http.Request, body []byte) {
		req := decodeAnt(t, r, body)
		if req.Model != "claude-test" || req.MaxTokens != anthropicMaxTokens {
			t.Errorf("model/max_tokens: %s", body)
		}
		if len(req.System) != 1 || req.System[0].Text != "Be brief." {
			t.Errorf("system not top-level: %s", body)
		}
		if len(req.Messages) != 1 || req.Messages[0].Role != "user" || len(req.Messages[0].Content) != 1 ||
			req.Messages[0].Content[0].Type != "text" || req.Messages[0].Content[0].Text != "Hi" {
			t.Errorf("messages = %s", body)
		}
		if req.Tools != nil {
			t.Errorf("tools sent without any: %s", body)
		}
	}})
	p := newTestAnthropic(srv.URL)
	reply, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: System, Content: "Be brief."}, {Role: User, Content: "Hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := Reply{Text: "Hello there.", Usage: Usage{InputTokens: 15, OutputTokens: 4}, StopReason: "end_turn", Model: "claude-test-20260101"}
	if reply.Latency <= 0 {
		t.Errorf("latency %v", reply.Latency)
	}
	reply.Latency = 0
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v, want %+v", reply, want)
	}
	if p.Name() != "anthropic:claude-test" {
		t.Errorf("name = %q", p.Name())
	}
}

// The scripted model calls two tools, then answers once given both
// results, which must arrive as one user turn of tool_result blocks.
func TestAnthropicToolCall(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	tools := []Tool{{Name: "read_file", Description: "Read a file.", Parameters: schema}}
	srv := newFakeServer(t, "/v1/messages",
		scripted{
			body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use",
			 "content":[{"type":"text","text":"Reading."},
			  {"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.txt"}},
			  {"type":"tool_use","id":"toolu_2","name":"read_file","input":{"path":"b.txt"}}],
			 "usage":{"input_tokens":30,"output_tokens":9}}`,
			check: func(t *testing.T, r *http.Request, body []byte) {
				req := decodeAnt(t, r, body)
				if len(req.Tools) != 1 || req.Tools[0].Name != "read_file" || req.Tools[0].Description != "Read a file." ||
					!sameJSON(t, req.Tools[0].InputSchema, schema) {
					t.Errorf("tools = %s", body)
				}
			},
		},
		scripted{
			body: antText,
			check: func(t *testing.T, r *http.Request, body []byte) {
				req := decodeAnt(t, r, body)
				if len(req.Messages) != 3 {
					t.Fatalf("messages = %s", body)
				}
				a, u := req.Messages[1], req.Messages[2]
				if a.Role != "assistant" || len(a.Content) != 3 || a.Content[0].Text != "Reading." ||
					a.Content[1].Type != "tool_use" || a.Content[1].ID != "toolu_1" || a.Content[1].Name != "read_file" ||
					!sameJSON(t, a.Content[1].Input, []byte(`{"path":"a.txt"}`)) || a.Content[2].ID != "toolu_2" {
					t.Errorf("assistant turn = %s", body)
				}
				if u.Role != "user" || len(u.Content) != 2 ||
					u.Content[0].Type != "tool_result" || u.Content[0].ToolUseID != "toolu_1" || u.Content[0].Content[0].Text != "contents of a" ||
					u.Content[1].Type != "tool_result" || u.Content[1].ToolUseID != "toolu_2" || u.Content[1].Content[0].Text != "contents of b" {
					t.Errorf("tool results turn = %s", body)
				}
			},
		})
	p := newTestAnthropic(srv.URL)
	msgs := []Message{{Role: User, Content: "What is in a.txt and b.txt?"}}
	reply, err := p.Complete(context.Background(), Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Reading." || reply.StopReason != "tool_use" || len(reply.ToolCalls) != 2 ||
		reply.ToolCalls[0].ID != "toolu_1" || reply.ToolCalls[0].Name != "read_file" ||
		!sameJSON(t, reply.ToolCalls[1].Arguments, []byte(`{"path":"b.txt"}`)) ||
		reply.Usage != (Usage{InputTokens: 30, OutputTokens: 9}) {
		t.Fatalf("reply = %+v", reply)
	}
	msgs = append(msgs,
		Message{Role: Assistant, Content: reply.Text, ToolCalls: reply.ToolCalls},
		Message{Role: ToolRole, ToolCallID: "toolu_1", Content: "contents of a"},
		Message{Role: ToolRole, ToolCallID: "toolu_2", Content: "contents of b"})
	reply, err = p.Complete(context.Background(), Request{Messages: msgs, Tools: tools})
	if err != nil || reply.Text != "Hello there." {
		t.Fatalf("follow-up: %+v, %v", reply, err)
	}
}

// The scripted server is rate-limited, then overloaded (529), then answers.
func TestAnthropicRetries(t *testing.T) {
	srv := newFakeServer(t, "/v1/messages",
		scripted{status: 429, header: map[string]string{"Retry-After": "0.05"},
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`},
		scripted{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		scripted{body: antText})
	reply, err := newTestAnthropic(srv.URL).Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "Hi"}}})
	if err != nil || reply.Text != "Hello there." {
		t.Fatalf("reply %+v, err %v", reply, err)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// The scripted server rejects the request (400): no retry, and the API's
// message reaches the caller.
func TestAnthropicNoRetryOn400(t *testing.T) {
	srv := newFakeServer(t, "/v1/messages", scripted{status: 400,
		body: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`})
	_, err := newTestAnthropic(srv.URL).Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "Hi"}}})
	if err == nil || !strings.Contains(err.Error(), "max_tokens: too large") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// The scripted server answers 200 with a body that is not JSON.
func TestAnthropicGarbageBody(t *testing.T) {
	srv := newFakeServer(t, "/v1/messages", scripted{body: `{"content": [`})
	_, err := newTestAnthropic(srv.URL).Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "Hi"}}})
	if err == nil {
		t.Fatal("no error")
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// Requests the API version cannot express fail before any request.
func TestAnthropicRefusedRequests(t *testing.T) {
	srv := newFakeServer(t, "/v1/messages")
	p := newTestAnthropic(srv.URL)
	temp := 0.0
	for name, req := range map[string]Request{
		"temperature":       {Messages: []Message{{Role: User, Content: "Hi"}}, Temperature: &temp},
		"tool result no id": {Messages: []Message{{Role: ToolRole, Content: "x"}}},
		"bad arguments":     {Messages: []Message{{Role: Assistant, ToolCalls: []ToolCall{{ID: "t", Name: "f", Arguments: json.RawMessage(`{oops`)}}}}},
		"bad schema":        {Messages: []Message{{Role: User, Content: "Hi"}}, Tools: []Tool{{Name: "f", Parameters: json.RawMessage(`{`)}}},
	} {
		if _, err := p.Complete(context.Background(), req); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests, want 0", n)
	}
}
