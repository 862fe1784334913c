package llmtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOpenAIScript checks what the scripted model says to each role, in
// text mode and with tools, through its HTTP wire format.
func TestOpenAIScript(t *testing.T) {
	srv := OpenAI(t, Script{Codes: []string{"print(1)", "print(2)"}, Answer: "one"})
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "execute_code"}}}
	call := func(name string) map[string]any {
		return map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "type": "function",
			"function": map[string]any{"name": name, "arguments": "{}"}}}}
	}
	system := map[string]any{"role": "system", "content": "You solve the user's task"}
	task := map[string]any{"role": "user", "content": "the task"}
	result := map[string]any{"role": "tool", "tool_call_id": "c", "content": "stdout: 1"}
	for _, tc := range []struct {
		name                 string
		messages, tools      []any
		wantText, wantCall   string
		wantArgumentContains string
	}{
		{name: "planner", messages: []any{map[string]any{"role": "system", "content": "You decide whether the task needs code"}, task}, wantText: `"needs_code": true`},
		{name: "verifier", messages: []any{map[string]any{"role": "system", "content": "You check an agent's work."}, task}, wantText: `"ok": true`},
		{name: "text mode, code", messages: []any{system, task}, wantText: "```python\nprint(1)\n```"},
		{name: "text mode, the answer", messages: []any{system, task, map[string]any{"role": "user", "content": "The code ran:\n1"}}, wantText: "FINAL ANSWER: one"},
		{name: "tools, code", messages: []any{system, task}, tools: tools, wantCall: "execute_code", wantArgumentContains: "print(2)"},
		{name: "tools, the answer after the code's result", messages: []any{system, task, call("execute_code"), result}, tools: tools, wantCall: "final_answer", wantArgumentContains: "one"},
		{name: "tools, code again after a refused answer", messages: []any{system, task, call("final_answer"), result}, tools: tools, wantCall: "execute_code", wantArgumentContains: "print(2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"model": "m", "messages": tc.messages, "tools": tc.tools})
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var reply struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct {
						Content   string `json:"content"`
						ToolCalls []struct {
							Function struct{ Name, Arguments string } `json:"function"`
						} `json:"tool_calls"`
					} `json:"message"`
				} `json:"choices"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil || len(reply.Choices) != 1 {
				t.Fatalf("reply: %v, %+v", err, reply)
			}
			m := reply.Choices[0].Message
			switch {
			case tc.wantCall == "" && !strings.Contains(m.Content, tc.wantText):
				t.Errorf("content %q, want %q in it", m.Content, tc.wantText)
			case tc.wantCall != "" && (len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != tc.wantCall ||
				!strings.Contains(m.ToolCalls[0].Function.Arguments, tc.wantArgumentContains) || reply.Choices[0].FinishReason != "tool_calls"):
				t.Errorf("tool calls %+v (finish %q), want %s with %q", m.ToolCalls, reply.Choices[0].FinishReason, tc.wantCall, tc.wantArgumentContains)
			}
		})
	}
}

// TestOpenAIFromPrompt checks that with FromPrompt the programs and the
// answer come from the conversation's last [[code]] message, counted per
// conversation, and from Codes and Answer when no message scripts them.
func TestOpenAIFromPrompt(t *testing.T) {
	srv := OpenAI(t, Script{Codes: []string{"print('default')"}, Answer: "default answer", FromPrompt: true})
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "execute_code"}}}
	system := map[string]any{"role": "system", "content": "You solve the user's task"}
	old := map[string]any{"role": "user", "content": "[[code]]print('old')[[/code]]"}
	task := map[string]any{"role": "user", "content": "Compute. [[code]]\nprint(1)\n[[/code]] then [[code]]print(2)[[/code]] [[answer]] 42 [[/answer]]"}
	call := map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "type": "function",
		"function": map[string]any{"name": "execute_code", "arguments": "{}"}}}}
	fenced := map[string]any{"role": "assistant", "content": "```python\nprint(1)\n```"}
	result := map[string]any{"role": "tool", "tool_call_id": "c", "content": "stdout: 1"}
	for _, tc := range []struct {
		name      string
		messages  []any
		withTools bool
		want      string
	}{
		{name: "first block", messages: []any{system, old, task}, withTools: true, want: `print(1)`},
		{name: "second block after one call", messages: []any{system, task, call, map[string]any{"role": "user", "content": "[[code]] in a reply does not count"}}, want: "print(2)"},
		{name: "text mode, second block after a fenced program", messages: []any{system, task, fenced, map[string]any{"role": "user", "content": "it failed"}}, want: "```python\nprint(2)\n```"},
		{name: "the answer", messages: []any{system, task, call, result}, withTools: true, want: `"answer":"42"`},
		{name: "unscripted conversation", messages: []any{system, map[string]any{"role": "user", "content": "plain task"}}, want: "print('default')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := map[string]any{"model": "m", "messages": tc.messages}
			if tc.withTools {
				req["tools"] = tools
			}
			body, _ := json.Marshal(req)
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var raw bytes.Buffer
			_, _ = raw.ReadFrom(resp.Body)
			var reply struct {
				Choices []struct {
					Message struct {
						Content   string `json:"content"`
						ToolCalls []struct {
							Function struct{ Arguments string } `json:"function"`
						} `json:"tool_calls"`
					} `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(raw.Bytes(), &reply); err != nil || len(reply.Choices) != 1 {
				t.Fatalf("reply %s: %v", raw.Bytes(), err)
			}
			m := reply.Choices[0].Message
			got := m.Content
			if len(m.ToolCalls) > 0 {
				got = m.ToolCalls[0].Function.Arguments
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("the model said %q, want %q in it", got, tc.want)
			}
		})
	}
}
