package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// anthropicMaxTokens is max_tokens when Request.MaxTokens is 0: the
// messages API requires one.
const anthropicMaxTokens = 4096

// anthropicProvider speaks Anthropic's messages API through the official
// SDK, github.com/anthropics/anthropic-sdk-go/v2. That SDK sends API
// version 2026-10-21, which authenticates with "Authorization: Bearer" and
// has no sampling parameters, so Request.Temperature is refused.
type anthropicProvider struct {
	client anthropic.Client
	model  string
	retry  retryPolicy
	// noSchema is set once the server refused a forced tool: later
	// requests ask in plain text.
	noSchema atomic.Bool
}

// newAnthropic builds the provider for a validated Config. The SDK's own
// credential and base-URL discovery (ANTHROPIC_* variables, profile files)
// is turned off: the Config alone decides.
func newAnthropic(c Config) *anthropicProvider {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithMaxRetries(0),
		// An explicit timeout also lifts the SDK's refusal of non-streaming
		// calls whose max_tokens suggests more than 10 minutes.
		option.WithRequestTimeout(c.timeout()),
	}
	if c.APIKey != "" {
		opts = append(opts, option.WithAPIKey(c.APIKey))
	}
	if c.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(c.BaseURL))
	}
	return &anthropicProvider{client: anthropic.NewClient(opts...), model: c.Model, retry: newRetryPolicy(c.MaxRetries)}
}

// Name returns "anthropic:" and the model.
func (p *anthropicProvider) Name() string { return ProviderAnthropic + ":" + p.model }

// Complete sends req as a message, retrying transient failures. A
// schema is asked for as a forced tool; one the server refuses is dropped,
// once and for the provider's life (see Request.Schema).
func (p *anthropicProvider) Complete(ctx context.Context, req Request) (Reply, error) {
	params, err := p.params(req)
	if err != nil {
		return Reply{}, fmt.Errorf("anthropic: %w", err)
	}
	forced := params.ToolChoice.OfTool != nil
	start := time.Now()
	msg, status, err := p.send(ctx, params)
	if err != nil && forced && rejects(err, status, "tool_choice") {
		p.noSchema.Store(true)
		params.Tools, params.ToolChoice, forced = nil, anthropic.ToolChoiceUnionParam{}, false
		msg, _, err = p.send(ctx, params)
	}
	if err != nil {
		return Reply{}, err
	}
	schema := ""
	if forced {
		schema = req.Schema.Name
	}
	reply, err := anthropicReply(msg, schema)
	reply.Latency = time.Since(start)
	return reply, err
}

// send makes the call, with retries; status is the last HTTP status
// received, if any.
func (p *anthropicProvider) send(ctx context.Context, params anthropic.MessageNewParams) (msg *anthropic.Message, status int, err error) {
	err = p.retry.do(ctx, func(ctx context.Context, obs *observer) (err error) {
		msg, err = p.client.Messages.New(ctx, params, option.WithMiddleware(obs.observe))
		status = obs.status
		return err
	})
	if err != nil {
		return nil, status, fmt.Errorf("anthropic: %w", err)
	}
	return msg, status, nil
}

// params maps req to the SDK's request: system messages go to the
// top-level system field and consecutive messages of the same API role
// (such as several tool results) are merged into one turn, as the API
// requires.
func (p *anthropicProvider) params(req Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{
		Model:     cmp.Or(req.Model, p.model),
		MaxTokens: int64(cmp.Or(req.MaxTokens, anthropicMaxTokens)),
	}
	if req.Temperature != nil {
		return params, errors.New("temperature is not supported by the messages API version this SDK speaks (2026-10-21)")
	}
	var roles []Role
	var turns [][]anthropic.ContentBlockParamUnion
	for i, m := range req.Messages {
		if m.Role == System {
			if m.Content != "" {
				params.System = append(params.System, anthropic.TextBlockParam{Text: m.Content})
			}
			continue
		}
		role, blocks, err := anthropicBlocks(m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i, err)
		}
		if n := len(roles); n > 0 && roles[n-1] == role {
			turns[n-1] = append(turns[n-1], blocks...)
			continue
		}
		roles, turns = append(roles, role), append(turns, blocks)
	}
	for i, blocks := range turns {
		if roles[i] == User {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
		} else {
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if !json.Valid(schema) {
			return params, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema)}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	if sc := req.Schema; sc != nil {
		if err := sc.check(len(req.Tools)); err != nil {
			return params, err
		}
		if !p.noSchema.Load() {
			tool := anthropic.ToolParam{Name: sc.Name, InputSchema: param.Override[anthropic.ToolInputSchemaParam](sc.Parameters)}
			if sc.Description != "" {
				tool.Description = anthropic.String(sc.Description)
			}
			params.Tools = []anthropic.ToolUnionParam{{OfTool: &tool}}
			params.ToolChoice = anthropic.ToolChoiceParamOfTool(sc.Name)
		}
	}
	return params, nil
}

// anthropicBlocks maps a non-system message to its API role (User or
// Assistant) and content blocks. Empty text is left out: the API refuses
// empty text blocks.
func anthropicBlocks(m Message) (Role, []anthropic.ContentBlockParamUnion, error) {
	var blocks []anthropic.ContentBlockParamUnion
	if m.Content != "" && m.Role != ToolRole {
		blocks = append(blocks, anthropic.NewTextBlock(m.Content))
	}
	switch m.Role {
	case User:
		return User, blocks, nil
	case Assistant:
		for _, tc := range m.ToolCalls {
			input := tc.Arguments
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			if !json.Valid(input) {
				return "", nil, fmt.Errorf("tool call %q: arguments are not valid JSON", tc.ID)
			}
			blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Name))
		}
		return Assistant, blocks, nil
	case ToolRole:
		if m.ToolCallID == "" {
			return "", nil, errors.New("tool result without a ToolCallID")
		}
		result := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
		if m.Content != "" {
			result.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
		}
		return User, []anthropic.ContentBlockParamUnion{{OfToolResult: &result}}, nil
	}
	return "", nil, fmt.Errorf("unknown role %q", m.Role)
}

// anthropicReply maps a response. InputTokens includes tokens written to
// and read from the prompt cache, which the API counts apart. The input of
// a call of the tool named schema (the forced tool of Request.Schema) is
// the Structured object, not a tool call.
func anthropicReply(msg *anthropic.Message, schema string) (Reply, error) {
	if !msg.JSON.Content.Valid() {
		return Reply{}, errors.New("anthropic: response has no content")
	}
	u := msg.Usage
	reply := Reply{
		Usage: Usage{
			InputTokens:  int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
			OutputTokens: int(u.OutputTokens),
		},
		StopReason: string(msg.StopReason),
		Model:      msg.Model,
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch {
		case b.Type == "text":
			text.WriteString(b.Text)
		case b.Type == "tool_use" && schema != "" && b.Name == schema:
			reply.Structured = toolArguments(string(b.Input))
		case b.Type == "tool_use":
			reply.ToolCalls = append(reply.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: toolArguments(string(b.Input))})
		}
	}
	reply.Text = text.String()
	if msg.StopReason == anthropic.StopReasonRefusal {
		reply.Refusal = cmp.Or(strings.TrimSpace(reply.Text), "the model refused (stop_reason refusal)")
	}
	return reply, nil
}
