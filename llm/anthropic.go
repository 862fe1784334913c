package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// Complete sends req as a message, retrying transient failures.
func (p *anthropicProvider) Complete(ctx context.Context, req Request) (Reply, error) {
	params, err := p.params(req)
	if err != nil {
		return Reply{}, fmt.Errorf("anthropic: %w", err)
	}
	start := time.Now()
	var msg *anthropic.Message
	err = p.retry.do(ctx, func(ctx context.Context, obs *observer) (err error) {
		msg, err = p.client.Messages.New(ctx, params, option.WithMiddleware(obs.observe))
		return err
	})
	if err != nil {
		return Reply{}, fmt.Errorf("anthropic: %w", err)
	}
	reply, err := anthropicReply(msg)
	reply.Latency = time.Since(start)
	return reply, err
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
// and read from the prompt cache, which the API counts apart.
func anthropicReply(msg *anthropic.Message) (Reply, error) {
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
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			reply.ToolCalls = append(reply.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
		}
	}
	reply.Text = text.String()
	return reply, nil
}
