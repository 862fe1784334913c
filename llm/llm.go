// Package llm puts language-model providers behind one small interface:
// messages (and tools) in, a reply with text and/or tool calls and token
// usage out. Providers: any OpenAI-compatible chat-completions endpoint
// (OpenAI, Ollama, vLLM, llama.cpp's server, ...) and Anthropic's
// messages API, each through its official Go SDK.
package llm

import (
	"context"
	"encoding/json"
	"time"
)

// Role is who speaks a message.
type Role string

// The roles of a conversation.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	// ToolRole carries a tool's result back to the model.
	ToolRole Role = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role Role `json:"role"`
	// Content is the text of the message (for ToolRole, the tool's result).
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a ToolRole message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// Tool is a function the model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments object.
	Parameters json.RawMessage `json:"parameters"`
}

// ToolCall is the model's request to call a tool.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON object of arguments, as the model wrote it
	// (it may be malformed: the caller validates).
	Arguments json.RawMessage `json:"arguments"`
}

// Request is one call to a model.
type Request struct {
	// Model names the model; empty means the provider's configured one.
	Model    string    `json:"model,omitempty"`
	Messages []Message `json:"messages"`
	// Tools are offered for native tool calling; none means plain text.
	Tools []Tool `json:"tools,omitempty"`
	// MaxTokens bounds the reply; 0 means the provider's default.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature, if set, overrides the model's default.
	Temperature *float64 `json:"temperature,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Total returns all tokens used.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Reply is a model's answer.
type Reply struct {
	// Text is the reply's text, if any.
	Text string `json:"text,omitempty"`
	// ToolCalls are the tools the model asked to call, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Usage     Usage      `json:"usage"`
	// StopReason is the provider's reason for stopping ("stop",
	// "tool_calls", "end_turn", "max_tokens", ...).
	StopReason string `json:"stop_reason,omitempty"`
	// Model is the model that answered.
	Model string `json:"model,omitempty"`
	// Latency is the time the call took, retries included.
	Latency time.Duration `json:"latency"`
}

// Provider is a language model.
type Provider interface {
	// Complete sends the conversation and returns the model's reply. It
	// retries transient failures (429, 5xx, timeouts) itself.
	Complete(ctx context.Context, req Request) (Reply, error)
	// Name identifies the provider and model, such as "openai:gpt-4o".
	Name() string
}
