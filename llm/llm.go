// Package llm puts language-model providers behind one small interface:
// messages (and tools) in, a reply with text and/or tool calls and token
// usage out. Providers: any OpenAI-compatible chat-completions endpoint
// (OpenAI, Ollama, vLLM, llama.cpp's server, ...) and Anthropic's
// messages API, each through its official Go SDK. A request may ask for
// structured output (Request.Schema), enforced where the provider has it;
// ExtractJSON and StripThinking read replies that were asked for JSON in
// words, and ExtractCode replies asked for a code block.
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
	// Schema, if set, asks for the reply as one JSON object of that
	// shape (structured output), enforced where the provider can:
	// OpenAI's response_format (json_schema, strict), Anthropic's forced
	// tool. Reply.Structured then holds the object. A server that refuses
	// it (a 400 naming the field, as some OpenAI-compatible servers send)
	// is asked again in plain text, and the Provider remembers not to send
	// it again; so the prompt should ask for the same JSON in words, and
	// the caller read Reply.Text when Reply.Structured is empty. Schema
	// and Tools exclude each other.
	Schema *Schema `json:"schema,omitempty"`
}

// Schema is the shape of a structured reply.
type Schema struct {
	// Name names the object, such as "verdict": letters, digits, '_' and
	// '-', at most 64.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the object. For OpenAI's strict
	// mode every property is required and additionalProperties is false.
	Parameters json.RawMessage `json:"parameters"`
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
	// Structured is the JSON object asked for by Request.Schema, when the
	// provider enforced the schema; empty otherwise (see Request.Schema).
	Structured json.RawMessage `json:"structured,omitempty"`
	// Refusal, if not empty, says the model declined to answer: OpenAI's
	// refusal field or a content-filter stop, Anthropic's stop_reason
	// "refusal" (with the reply's text, if any). A refusal in prose is the
	// caller's to recognise.
	Refusal string `json:"refusal,omitempty"`
	// StopReason is the provider's reason for stopping ("stop",
	// "tool_calls", "end_turn", "max_tokens", ...).
	StopReason string `json:"stop_reason,omitempty"`
	// Model is the model that answered.
	Model string `json:"model,omitempty"`
	// Latency is the time the call took, retries included.
	Latency time.Duration `json:"latency"`
}

// Cut reports whether the reply stopped at the token limit, so its text
// or tool arguments may end mid-way: finish_reason "length" (OpenAI),
// stop_reason "max_tokens" or "model_context_window_exceeded" (Anthropic).
func (r Reply) Cut() bool {
	switch r.StopReason {
	case "length", "max_tokens", "model_context_window_exceeded":
		return true
	}
	return false
}

// Provider is a language model.
type Provider interface {
	// Complete sends the conversation and returns the model's reply. It
	// retries transient failures (429, 5xx, timeouts) itself.
	Complete(ctx context.Context, req Request) (Reply, error)
	// Name identifies the provider and model, such as "openai:gpt-4o".
	Name() string
}
