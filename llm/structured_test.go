package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// These tests use the fake servers of openai_test.go: the model is
// scripted in each provider's wire format and each request is checked.

var verdictSchema = &Schema{Name: "verdict", Description: "The verdict.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`)}

// oaiReply is a chat completion whose message is msg (a JSON object's
// members) and finish reason finish.
func oaiReply(msg, finish string) string {
	return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"` + finish +
		`","message":{"role":"assistant",` + msg + `}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
}

// antReply is a message with the content blocks content and stop reason
// stop.
func antReply(content, stop string) string {
	return `{"id":"m","type":"message","role":"assistant","model":"claude-test","stop_reason":"` + stop +
		`","stop_sequence":null,"content":[` + content + `],"usage":{"input_tokens":1,"output_tokens":1}}`
}

// A schema goes out as response_format json_schema (strict); the content
// of the reply is its object. The other reply shapes: a refusal, a
// content filter, a cut reply, and tool arguments as servers send them.
func TestOpenAIStructuredAndReplyShapes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		schema     *Schema
		// want: the reply's fields checked
		structured, refusal, args, text string
		cut                             bool
	}{
		{name: "schema enforced", schema: verdictSchema, body: oaiReply(`"content":"{\"ok\": true}"`, "stop"),
			structured: `{"ok": true}`, text: `{"ok": true}`},
		{name: "schema ignored by the server: prose", schema: verdictSchema, body: oaiReply(`"content":"Yes, it is."`, "stop"),
			text: "Yes, it is."},
		{name: "no schema: JSON content is text", body: oaiReply(`"content":"{\"ok\": true}"`, "stop"), text: `{"ok": true}`},
		{name: "refusal field", schema: verdictSchema, body: oaiReply(`"content":null,"refusal":"I can't help with that."`, "stop"),
			refusal: "I can't help with that."},
		{name: "content filter", body: oaiReply(`"content":""`, "content_filter"), refusal: "the provider's content filter stopped the reply"},
		{name: "cut at the token limit", body: oaiReply(`"content":"`+"```python\\nfor i in"+`"`, "length"), cut: true, text: "```python\nfor i in"},
		{name: "arguments as a string", body: oaiReply(`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"code\": \"x\"}"}}]`, "tool_calls"),
			args: `{"code": "x"}`},
		{name: "arguments as an object", body: oaiReply(`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"code":"x"}}}]`, "tool_calls"),
			args: `{"code":"x"}`},
		{name: "arguments encoded twice", body: oaiReply(`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"\"{\\\"code\\\": \\\"x\\\"}\""}}]`, "tool_calls"),
			args: `{"code": "x"}`},
		{name: "empty arguments", body: oaiReply(`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":""}}]`, "tool_calls"),
			args: `{}`},
		{name: "malformed arguments kept", body: oaiReply(`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"code\": \"x\""}}]`, "tool_calls"),
			args: `{"code": "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, "/v1/chat/completions", scripted{body: tc.body, check: func(t *testing.T, r *http.Request, body []byte) {
				var req struct {
					ResponseFormat *struct {
						Type       string
						JSONSchema struct {
							Name, Description string
							Strict            bool
							Schema            json.RawMessage
						} `json:"json_schema"`
					} `json:"response_format"`
				}
				_ = json.Unmarshal(body, &req)
				switch rf := req.ResponseFormat; {
				case tc.schema == nil && rf != nil:
					t.Errorf("response_format sent without a schema: %s", body)
				case tc.schema != nil && (rf == nil || rf.Type != "json_schema" || rf.JSONSchema.Name != "verdict" || !rf.JSONSchema.Strict ||
					rf.JSONSchema.Description != "The verdict." || !sameJSON(t, rf.JSONSchema.Schema, tc.schema.Parameters)):
					t.Errorf("response_format = %s", body)
				}
			}})
			reply, err := newTestOpenAI(srv.URL).Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "Hi"}}, Schema: tc.schema})
			if err != nil {
				t.Fatal(err)
			}
			var args string
			if len(reply.ToolCalls) == 1 {
				args = string(reply.ToolCalls[0].Arguments)
			}
			if string(reply.Structured) != tc.structured || reply.Refusal != tc.refusal || args != tc.args || reply.Text != tc.text || reply.Cut() != tc.cut {
				t.Errorf("reply: structured=%s refusal=%q args=%s text=%q cut=%v; want %s %q %s %q %v",
					reply.Structured, reply.Refusal, args, reply.Text, reply.Cut(), tc.structured, tc.refusal, tc.args, tc.text, tc.cut)
			}
		})
	}
}

// A server that refuses response_format (a 400 naming it, as old vLLM
// and llama.cpp servers answer) is asked again without it at once, and
// never sent it again by that provider; a 400 about something else is
// an error, with no second request.
func TestOpenAISchemaFallback(t *testing.T) {
	hasFormat := func(want bool) func(t *testing.T, r *http.Request, body []byte) {
		return func(t *testing.T, r *http.Request, body []byte) {
			if got := strings.Contains(string(body), `"response_format"`); got != want {
				t.Errorf("response_format sent = %v, want %v: %s", got, want, body)
			}
		}
	}
	for _, refusal := range []string{
		`{"object":"error","message":"[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}]","type":"BadRequestError","code":400}`,
		`{"error":{"code":400,"message":"Unsupported param: json_schema","type":"invalid_request_error"}}`,
	} {
		plain := scripted{body: oaiReply(`"content":"yes"`, "stop"), check: hasFormat(false)}
		srv := newFakeServer(t, "/v1/chat/completions",
			scripted{status: 400, body: refusal, check: hasFormat(true)}, plain, plain)
		p := newTestOpenAI(srv.URL)
		for i := range 2 {
			reply, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "ok?"}}, Schema: verdictSchema})
			if err != nil || reply.Text != "yes" || reply.Structured != nil {
				t.Errorf("call %d: reply %+v, err %v", i+1, reply, err)
			}
		}
		if n := len(srv.requests()); n != 3 {
			t.Errorf("%d requests, want 3 (refused, asked again, then plain from the start)", n)
		}
	}
	srv := newFakeServer(t, "/v1/chat/completions", scripted{status: 400, body: `{"error":{"message":"Invalid model: nope"}}`, check: hasFormat(true)})
	_, err := newTestOpenAI(srv.URL).Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "ok?"}}, Schema: verdictSchema})
	if err == nil || !strings.Contains(err.Error(), "Invalid model") || len(srv.requests()) != 1 {
		t.Errorf("a 400 not about the schema: err %v after %d requests, want the error after 1", err, len(srv.requests()))
	}
}

// A schema goes out as the only tool, forced by tool_choice; the input of
// the model's call is the object, not a tool call. Also a refusal and a
// cut reply.
func TestAnthropicStructuredAndReplyShapes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		schema     *Schema
		// want
		structured, refusal, text string
		calls                     int
		cut                       bool
	}{
		{name: "forced tool", schema: verdictSchema, body: antReply(`{"type":"tool_use","id":"toolu_1","name":"verdict","input":{"ok":true}}`, "tool_use"),
			structured: `{"ok":true}`},
		{name: "forced tool ignored: text", schema: verdictSchema, body: antReply(`{"type":"text","text":"Looks good."}`, "end_turn"),
			text: "Looks good."},
		{name: "a tool of another name stays a call", body: antReply(`{"type":"tool_use","id":"toolu_1","name":"verdict","input":{"ok":true}}`, "tool_use"),
			calls: 1},
		{name: "refusal with text", body: antReply(`{"type":"text","text":"I won't help with that."}`, "refusal"),
			refusal: "I won't help with that.", text: "I won't help with that."},
		{name: "refusal without text", body: antReply(``, "refusal"), refusal: "the model refused (stop_reason refusal)"},
		{name: "cut at max_tokens", body: antReply(`{"type":"text","text":"<think>long"}`, "max_tokens"), text: "<think>long", cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, "/v1/messages", scripted{body: tc.body, check: func(t *testing.T, r *http.Request, body []byte) {
				var req struct {
					Tools []struct {
						Name        string
						InputSchema json.RawMessage `json:"input_schema"`
					}
					ToolChoice *struct{ Type, Name string } `json:"tool_choice"`
				}
				_ = json.Unmarshal(body, &req)
				switch {
				case tc.schema == nil && (req.ToolChoice != nil || req.Tools != nil):
					t.Errorf("tools sent without a schema: %s", body)
				case tc.schema != nil && (len(req.Tools) != 1 || req.Tools[0].Name != "verdict" || !sameJSON(t, req.Tools[0].InputSchema, tc.schema.Parameters) ||
					req.ToolChoice == nil || req.ToolChoice.Type != "tool" || req.ToolChoice.Name != "verdict"):
					t.Errorf("forced tool = %s", body)
				}
			}})
			reply, err := newTestAnthropic(srv.URL).Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "Hi"}}, Schema: tc.schema})
			if err != nil {
				t.Fatal(err)
			}
			if string(reply.Structured) != tc.structured || reply.Refusal != tc.refusal || reply.Text != tc.text || len(reply.ToolCalls) != tc.calls || reply.Cut() != tc.cut {
				t.Errorf("reply: structured=%s refusal=%q text=%q calls=%d cut=%v; want %s %q %q %d %v",
					reply.Structured, reply.Refusal, reply.Text, len(reply.ToolCalls), reply.Cut(), tc.structured, tc.refusal, tc.text, tc.calls, tc.cut)
			}
		})
	}
}

// An Anthropic-compatible server that refuses tool_choice is asked again
// in plain text, and not sent it again.
func TestAnthropicSchemaFallback(t *testing.T) {
	plain := scripted{body: antReply(`{"type":"text","text":"yes"}`, "end_turn"), check: func(t *testing.T, r *http.Request, body []byte) {
		if strings.Contains(string(body), "tool_choice") || strings.Contains(string(body), `"tools"`) {
			t.Errorf("tools sent after the refusal: %s", body)
		}
	}}
	srv := newFakeServer(t, "/v1/messages",
		scripted{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"tool_choice: Extra inputs are not permitted"}}`},
		plain, plain)
	p := newTestAnthropic(srv.URL)
	for i := range 2 {
		reply, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "ok?"}}, Schema: verdictSchema})
		if err != nil || reply.Text != "yes" || reply.Structured != nil {
			t.Errorf("call %d: reply %+v, err %v", i+1, reply, err)
		}
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// A bad schema is refused before any request, naming the rule.
func TestSchemaRefused(t *testing.T) {
	tools := []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []struct {
		name   string
		schema Schema
		tools  []Tool
		want   string
	}{
		{"bad name", Schema{Name: "the verdict", Parameters: verdictSchema.Parameters}, nil, `schema: name "the verdict": must be 1 to 64 letters, digits, '_' or '-'`},
		{"not an object", Schema{Name: "v", Parameters: json.RawMessage(`[1]`)}, nil, `schema "v": parameters: must be a JSON object`},
		{"with tools", *verdictSchema, tools, "schema: a request has a schema or tools, not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Messages: []Message{{Role: User, Content: "x"}}, Schema: &tc.schema, Tools: tc.tools}
			for _, p := range []Provider{newTestOpenAI("http://127.0.0.1:1"), newTestAnthropic("http://127.0.0.1:1")} {
				if _, err := p.Complete(context.Background(), req); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: err = %v, want %q", p.Name(), err, tc.want)
				}
			}
		})
	}
}
