package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openAIBaseURL is OpenAI's own endpoint, used when Config.BaseURL is empty.
const openAIBaseURL = "https://api.openai.com/v1/"

// openAIProvider speaks OpenAI-compatible chat completions through the
// official SDK, github.com/openai/openai-go/v3.
type openAIProvider struct {
	client openai.Client
	model  string
	// official is set for OpenAI's own endpoint, which wants
	// max_completion_tokens (its reasoning models refuse max_tokens);
	// compatible servers such as Ollama know only max_tokens.
	official bool
	retry    retryPolicy
	// noSchema is set once the server refused response_format: later
	// requests ask in plain text.
	noSchema atomic.Bool
}

// newOpenAI builds the provider for a validated Config. The base URL and
// key are always set explicitly, so OPENAI_BASE_URL and OPENAI_API_KEY,
// which the SDK reads by itself, cannot override the Config.
func newOpenAI(c Config) *openAIProvider {
	base := cmp.Or(c.BaseURL, openAIBaseURL)
	u, _ := url.Parse(base) // Validate checked it
	return &openAIProvider{
		client: openai.NewClient(
			option.WithBaseURL(base),
			option.WithAPIKey(c.APIKey),
			option.WithMaxRetries(0),
			option.WithRequestTimeout(c.timeout()),
		),
		model:    c.Model,
		official: u.Host == "api.openai.com",
		retry:    newRetryPolicy(c.MaxRetries),
	}
}

// Name returns "openai:" and the model.
func (p *openAIProvider) Name() string { return ProviderOpenAI + ":" + p.model }

// Complete sends req as a chat completion, retrying transient failures.
// A schema the server refuses is dropped, once and for the provider's
// life (see Request.Schema).
func (p *openAIProvider) Complete(ctx context.Context, req Request) (Reply, error) {
	params, err := p.params(req)
	if err != nil {
		return Reply{}, fmt.Errorf("openai: %w", err)
	}
	start := time.Now()
	resp, status, err := p.send(ctx, params)
	if err != nil && params.ResponseFormat.OfJSONSchema != nil && rejects(err, status, "response_format", "json_schema") {
		p.noSchema.Store(true)
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{}
		resp, _, err = p.send(ctx, params)
	}
	if err != nil {
		return Reply{}, err
	}
	reply, err := openAIReply(resp, params.ResponseFormat.OfJSONSchema != nil)
	reply.Latency = time.Since(start)
	return reply, err
}

// send makes the call, with retries; status is the last HTTP status
// received, if any.
func (p *openAIProvider) send(ctx context.Context, params openai.ChatCompletionNewParams) (resp *openai.ChatCompletion, status int, err error) {
	err = p.retry.do(ctx, func(ctx context.Context, obs *observer) (err error) {
		resp, err = p.client.Chat.Completions.New(ctx, params, option.WithMiddleware(obs.observe))
		status = obs.status
		return err
	})
	if err != nil {
		return nil, status, openAIError(err)
	}
	return resp, status, nil
}

// openAIError adds the API's error text, which the SDK's own error message
// leaves out: error.message, or else the start of the body (vLLM, for one,
// puts its message at the top level; a proxy may answer in HTML).
func openAIError(err error) error {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("openai: %w", err)
	}
	text := apiErr.Message
	if text == "" && apiErr.Response != nil {
		body, _ := io.ReadAll(io.LimitReader(apiErr.Response.Body, 512))
		text = strings.TrimSpace(string(body))
	}
	if text == "" {
		return fmt.Errorf("openai: %w", err)
	}
	return fmt.Errorf("openai: %w: %s", err, text)
}

// params maps req to the SDK's request.
func (p *openAIProvider) params(req Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: cmp.Or(req.Model, p.model)}
	for i, m := range req.Messages {
		msg, err := openAIMessage(m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i, err)
		}
		params.Messages = append(params.Messages, msg)
	}
	for _, t := range req.Tools {
		fn := openai.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &fn.Parameters); err != nil {
				return params, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
			}
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.MaxTokens > 0 {
		if p.official {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if sc := req.Schema; sc != nil {
		if err := sc.check(len(req.Tools)); err != nil {
			return params, err
		}
		if !p.noSchema.Load() {
			js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: sc.Name, Strict: openai.Bool(true), Schema: sc.Parameters}
			if sc.Description != "" {
				js.Description = openai.String(sc.Description)
			}
			params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
		}
	}
	return params, nil
}

// openAIMessage maps one message.
func openAIMessage(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case System:
		return openai.SystemMessage(m.Content), nil
	case User:
		return openai.UserMessage(m.Content), nil
	case Assistant:
		var a openai.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      tc.Name,
						Arguments: cmp.Or(string(tc.Arguments), "{}"),
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case ToolRole:
		if m.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("tool result without a ToolCallID")
		}
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
}

// openAIReply maps the first choice of a response; structured says the
// request had a response_format, so the content is the object.
func openAIReply(resp *openai.ChatCompletion, structured bool) (Reply, error) {
	if len(resp.Choices) == 0 {
		return Reply{}, errors.New("openai: response has no choices")
	}
	choice := resp.Choices[0]
	reply := Reply{
		Text:       choice.Message.Content,
		Refusal:    choice.Message.Refusal,
		Usage:      Usage{InputTokens: int(resp.Usage.PromptTokens), OutputTokens: int(resp.Usage.CompletionTokens)},
		StopReason: choice.FinishReason,
		Model:      resp.Model,
	}
	if reply.Refusal == "" && choice.FinishReason == "content_filter" {
		reply.Refusal = "the provider's content filter stopped the reply"
	}
	if content := strings.TrimSpace(reply.Text); structured && strings.HasPrefix(content, "{") && json.Valid([]byte(content)) {
		reply.Structured = json.RawMessage(content)
	}
	for _, tc := range choice.Message.ToolCalls {
		reply.ToolCalls = append(reply.ToolCalls, ToolCall{
			ID:        tc.ID,
			Name:      tc.Function.Name,
			Arguments: toolArguments(tc.Function.Arguments),
		})
	}
	return reply, nil
}
