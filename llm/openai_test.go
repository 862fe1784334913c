package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// No real model can be reached from these tests: each starts a local
// server that speaks the provider's wire format and plays a scripted
// model, and checks what the client sent.

// scripted is one canned answer of a fake model server.
type scripted struct {
	status int // 0 means 200
	header map[string]string
	body   string
	delay  time.Duration // wait before answering, unless the client gives up first
	// check asserts what the client sent; it may be nil.
	check func(t *testing.T, r *http.Request, body []byte)
}

// fakeServer answers each POST to its path with the next scripted answer
// and records when requests came.
type fakeServer struct {
	*httptest.Server
	mu    sync.Mutex
	times []time.Time
}

func newFakeServer(t *testing.T, path string, script ...scripted) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.times = append(f.times, time.Now())
		n := len(f.times)
		f.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != path {
			t.Errorf("request %d: got %s %s, want POST %s", n, r.Method, r.URL.Path, path)
		}
		if n > len(script) {
			t.Errorf("request %d: not in the script (%d answers)", n, len(script))
			http.Error(w, "unexpected", http.StatusTeapot)
			return
		}
		s := script[n-1]
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("request %d: reading body: %v", n, err)
		}
		if s.check != nil {
			s.check(t, r, body)
		}
		select {
		case <-time.After(s.delay):
		case <-r.Context().Done():
			return
		}
		for k, v := range s.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		if s.status != 0 {
			w.WriteHeader(s.status)
		}
		_, _ = w.Write([]byte(s.body))
	}))
	t.Cleanup(f.Close)
	return f
}

// requests returns the arrival times of the requests so far.
func (f *fakeServer) requests() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.times...)
}

// fastRetry keeps the tests quick: tiny backoff, default attempt count.
func fastRetry() retryPolicy {
	p := newRetryPolicy(0)
	p.baseDelay, p.maxDelay = time.Millisecond, 5*time.Millisecond
	return p
}

// sameJSON reports whether a and b hold equal JSON values.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("bad JSON %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// oaiRequest is the part of a chat-completions request the tests check.
type oaiRequest struct {
	Model    string
	Messages []struct {
		Role       string
		Content    *string
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID, Type string
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
	}
	Tools []struct {
		Type     string
		Function struct {
			Name, Description string
			Parameters        json.RawMessage
		}
	}
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	Temperature         *float64
}

// str dereferences p; nil gives "<nil>".
func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func decodeOAI(t *testing.T, r *http.Request, body []byte) oaiRequest {
	t.Helper()
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want Bearer sk-test", got)
	}
	var req oaiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Errorf("request body %s: %v", body, err)
	}
	return req
}

// testTimeout bounds one attempt against a fake server.
const testTimeout = 500 * time.Millisecond

func newTestOpenAI(url string) *openAIProvider {
	p := newOpenAI(Config{Provider: ProviderOpenAI, Model: "test-model", BaseURL: url + "/v1", APIKey: "sk-test", Timeout: testTimeout})
	p.retry = fastRetry()
	return p
}

const oaiText = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"test-model-0613",
 "choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`

// The scripted model answers a plain question with text.
func TestOpenAIText(t *testing.T) {
	srv := newFakeServer(t, "/v1/chat/completions", scripted{body: oaiText, check: func(t *testing.T, r *http.Request, body []byte) {
		req := decodeOAI(t, r, body)
		if req.Model != "test-model" {
			t.Errorf("model = %q", req.Model)
		}
		if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user" ||
			str(req.Messages[0].Content) != "Be brief." || str(req.Messages[1].Content) != "Hi" {
			t.Errorf("messages = %s", body)
		}
		if req.Tools != nil {
			t.Errorf("tools sent without any: %s", body)
		}
		// A compatible server gets max_tokens, which Ollama understands.
		if req.MaxTokens == nil || *req.MaxTokens != 100 || req.MaxCompletionTokens != nil {
			t.Errorf("token limit: %s", body)
		}
		if req.Temperature == nil || *req.Temperature != 0.5 {
			t.Errorf("temperature: %s", body)
		}
	}})
	p := newTestOpenAI(srv.URL)
	temp := 0.5
	reply, err := p.Complete(context.Background(), Request{
		Messages:    []Message{{Role: System, Content: "Be brief."}, {Role: User, Content: "Hi"}},
		MaxTokens:   100,
		Temperature: &temp,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Reply{Text: "Hello there.", Usage: Usage{InputTokens: 12, OutputTokens: 5}, StopReason: "stop", Model: "test-model-0613"}
	if reply.Latency <= 0 {
		t.Errorf("latency %v", reply.Latency)
	}
	reply.Latency = 0
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v, want %+v", reply, want)
	}
	if reply.Usage.Total() != 17 {
		t.Errorf("total = %d", reply.Usage.Total())
	}
	if p.Name() != "openai:test-model" {
		t.Errorf("name = %q", p.Name())
	}
}

// The scripted model calls a tool, then answers once given its result.
func TestOpenAIToolCall(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	tools := []Tool{{Name: "read_file", Description: "Read a file.", Parameters: schema}}
	srv := newFakeServer(t, "/v1/chat/completions",
		scripted{
			body: `{"id":"c1","object":"chat.completion","model":"test-model","choices":[{"index":0,"finish_reason":"tool_calls",
			 "message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}]}}],
			 "usage":{"prompt_tokens":30,"completion_tokens":9,"total_tokens":39}}`,
			check: func(t *testing.T, r *http.Request, body []byte) {
				req := decodeOAI(t, r, body)
				if len(req.Tools) != 1 || req.Tools[0].Type != "function" || req.Tools[0].Function.Name != "read_file" ||
					req.Tools[0].Function.Description != "Read a file." || !sameJSON(t, req.Tools[0].Function.Parameters, schema) {
					t.Errorf("tools = %s", body)
				}
			},
		},
		scripted{
			body: oaiText,
			check: func(t *testing.T, r *http.Request, body []byte) {
				req := decodeOAI(t, r, body)
				if len(req.Messages) != 3 {
					t.Fatalf("messages = %s", body)
				}
				a, tool := req.Messages[1], req.Messages[2]
				if a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Type != "function" ||
					a.ToolCalls[0].Function.Name != "read_file" || a.ToolCalls[0].Function.Arguments != `{"path":"a.txt"}` {
					t.Errorf("assistant turn = %s", body)
				}
				if tool.Role != "tool" || tool.ToolCallID != "call_1" || str(tool.Content) != "contents of a" {
					t.Errorf("tool turn = %s", body)
				}
			},
		})
	p := newTestOpenAI(srv.URL)
	msgs := []Message{{Role: User, Content: "What is in a.txt?"}}
	reply, err := p.Complete(context.Background(), Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []ToolCall{{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}}
	if reply.Text != "" || reply.StopReason != "tool_calls" || !reflect.DeepEqual(reply.ToolCalls, wantCalls) ||
		reply.Usage != (Usage{InputTokens: 30, OutputTokens: 9}) {
		t.Fatalf("reply = %+v", reply)
	}
	msgs = append(msgs,
		Message{Role: Assistant, ToolCalls: reply.ToolCalls},
		Message{Role: ToolRole, ToolCallID: "call_1", Content: "contents of a"})
	reply, err = p.Complete(context.Background(), Request{Messages: msgs, Tools: tools})
	if err != nil || reply.Text != "Hello there." {
		t.Fatalf("follow-up: %+v, %v", reply, err)
	}
}

const oaiError = `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`

// The scripted server refuses first (429 with Retry-After, then 500) and
// answers on the retry.
func TestOpenAIRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		first    scripted
		minDelay time.Duration
	}{
		{"429 Retry-After", scripted{status: 429, header: map[string]string{"Retry-After": "0.2"}, body: oaiError}, 200 * time.Millisecond},
		{"500", scripted{status: 500, body: `{"error":{"message":"boom"}}`}, 0},
		{"timeout", scripted{delay: 2 * time.Second, body: oaiText}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, "/v1/chat/completions", tc.first, scripted{body: oaiText})
			p := newTestOpenAI(srv.URL)
			reply, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "Hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			times := srv.requests()
			if len(times) != 2 {
				t.Fatalf("%d requests, want 2", len(times))
			}
			if gap := times[1].Sub(times[0]); gap < tc.minDelay {
				t.Errorf("retried after %v, want at least %v", gap, tc.minDelay)
			}
			if reply.Text != "Hello there." || reply.Latency < times[1].Sub(times[0]) {
				t.Errorf("reply = %+v", reply)
			}
		})
	}
}

// The scripted server rejects the request (400): no retry, and the API's
// own message reaches the caller, whether it comes the OpenAI way, the vLLM
// way (top-level message) or as plain text.
func TestOpenAINoRetryOn400(t *testing.T) {
	for _, body := range []string{
		`{"error":{"message":"Invalid model: nope","type":"invalid_request_error","param":"model","code":null}}`,
		`{"object":"error","message":"Invalid model: nope","type":"BadRequestError","code":400}`,
		`Invalid model: nope`,
	} {
		srv := newFakeServer(t, "/v1/chat/completions", scripted{status: 400, body: body})
		_, err := newTestOpenAI(srv.URL).Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "Hi"}}})
		if err == nil || !strings.Contains(err.Error(), "Invalid model: nope") || !strings.Contains(err.Error(), "400") {
			t.Errorf("body %s: err = %v", body, err)
		}
		if n := len(srv.requests()); n != 1 {
			t.Errorf("body %s: %d requests, want 1", body, n)
		}
	}
}

// The scripted server keeps failing; attempts are bounded.
func TestOpenAIGivesUp(t *testing.T) {
	fail := scripted{status: 503, body: `{"error":{"message":"overloaded"}}`}
	srv := newFakeServer(t, "/v1/chat/completions", fail, fail)
	p := newTestOpenAI(srv.URL)
	p.retry.attempts = 2
	_, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "Hi"}}})
	if err == nil || !strings.Contains(err.Error(), "giving up after 2 attempts") || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("err = %v", err)
	}
}

// The scripted server asks for a long wait; cancelling the context ends
// the call at once.
func TestOpenAICancelledWhileWaiting(t *testing.T) {
	srv := newFakeServer(t, "/v1/chat/completions", scripted{status: 429, header: map[string]string{"Retry-After": "30"}, body: oaiError})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := newTestOpenAI(srv.URL).Complete(ctx, Request{Messages: []Message{{Role: User, Content: "Hi"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// The scripted server answers 200 with a body that is not JSON.
func TestOpenAIGarbageBody(t *testing.T) {
	srv := newFakeServer(t, "/v1/chat/completions", scripted{body: `<html>this is not json{`})
	_, err := newTestOpenAI(srv.URL).Complete(context.Background(), Request{Messages: []Message{{Role: User, Content: "Hi"}}})
	if err == nil {
		t.Fatal("no error")
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1 (a bad body is not retried)", n)
	}
}

// OpenAI's own endpoint gets max_completion_tokens; no request is made.
func TestOpenAIOfficialTokenLimit(t *testing.T) {
	p := newOpenAI(Config{Provider: ProviderOpenAI, Model: "gpt-test", APIKey: "k"})
	params, err := p.params(Request{Messages: []Message{{Role: User, Content: "Hi"}}, MaxTokens: 7})
	if err != nil {
		t.Fatal(err)
	}
	if params.MaxCompletionTokens.Value != 7 || params.MaxTokens.Valid() {
		t.Errorf("params = %+v", params)
	}
	if _, err := p.params(Request{Messages: []Message{{Role: ToolRole, Content: "x"}}}); err == nil {
		t.Error("tool result without an id accepted")
	}
}

func TestRetryAfterAndBackoff(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"3":                             3 * time.Second,
		"0.25":                          250 * time.Millisecond,
		"Tue, 01 Jan 2030 00:00:05 GMT": 5 * time.Second,
	} {
		if got, ok := retryAfter(http.Header{"Retry-After": {v}}, now); !ok || got != want {
			t.Errorf("Retry-After %q = %v, %v; want %v", v, got, ok, want)
		}
	}
	if _, ok := retryAfter(http.Header{"Retry-After": {"soon"}}, now); ok {
		t.Error("Retry-After: soon accepted")
	}
	p := newRetryPolicy(0)
	for n := 1; n <= 40; n++ {
		d := p.backoff(n)
		full := min(p.baseDelay<<min(n-1, 10), p.maxDelay)
		if d < full/2 || d > full {
			t.Errorf("backoff(%d) = %v, want in [%v, %v]", n, d, full/2, full)
		}
	}
}
