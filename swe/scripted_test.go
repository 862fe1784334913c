package swe

// The harness of the loop's end-to-end tests (loop_test.go, run_test.go,
// tools_test.go). No language model can run here, so the model is
// SCRIPTED: a local httptest server speaks a provider's real wire format
// (OpenAI chat completions or Anthropic messages, as agent/scripted_test.go
// does) and answers each request from a script, while the real llm
// provider clients (llm.New) talk to it and the real native sandbox
// (linux.New on the datascience image: bash, git, patch, pytest) runs
// what the script makes the agent do.
//
// Each scripted turn is a function of the request the model received, so
// a test can assert what the model was shown (the tool results, the
// notes); requests are recorded in one shape for both wire formats.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The wire formats the scripted server speaks.
const (
	wireOpenAI    = llm.ProviderOpenAI
	wireAnthropic = llm.ProviderAnthropic
)

// wireCall is one tool call in a scripted reply; an empty ID is filled
// in ("call_N" on OpenAI's wire, "toolu_N" on Anthropic's).
type wireCall struct {
	ID, Name string
	// Args is the arguments JSON as the model writes it; on OpenAI's wire
	// it travels as a string and may be malformed.
	Args string
	// Twice sends the arguments on OpenAI's wire encoded twice (a string
	// holding the JSON string), as some compatible servers do.
	Twice bool
}

// wireReply is one scripted answer.
type wireReply struct {
	Text  string
	Calls []wireCall
	// Stop overrides the finish_reason / stop_reason ("length",
	// "max_tokens", "refusal").
	Stop string
	// Refusal is OpenAI's refusal field.
	Refusal string
	// In and Out are the usage reported (default 10 and 5).
	In, Out int
}

// wireMessage is a message as the model received it, the same for both
// formats (Anthropic tool_result blocks become role "tool").
type wireMessage struct {
	Role, Text, ToolCallID string
	ToolCalls              []wireCall
}

// wireRequest is one request the scripted model received.
type wireRequest struct {
	System   string
	Messages []wireMessage
	Tools    []string
}

// last returns the last message.
func (r *wireRequest) last() wireMessage {
	if len(r.Messages) == 0 {
		return wireMessage{}
	}
	return r.Messages[len(r.Messages)-1]
}

// toolResults returns the tool results (or, in text mode, the user
// message) that answer the model's last reply.
func (r *wireRequest) toolResults() []wireMessage {
	var out []wireMessage
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "assistant"; i-- {
		out = append([]wireMessage{r.Messages[i]}, out...)
	}
	return out
}

// wireTurn answers one request; it may assert with t.Errorf (never
// t.Fatal: it runs on the server's goroutine).
type wireTurn func(t testing.TB, req *wireRequest) wireReply

// wireModel is the local server playing the model.
type wireModel struct {
	t     testing.TB
	wire  string
	srv   *httptest.Server
	turns []wireTurn
	// after, if set, answers every request past the script (a model that
	// never stops).
	after wireTurn

	mu       sync.Mutex
	requests []*wireRequest
	ids      int
}

// newWireModel starts a scripted model speaking wire, closed when t ends.
func newWireModel(t testing.TB, wire string, turns ...wireTurn) *wireModel {
	t.Helper()
	m := &wireModel{t: t, wire: wire, turns: turns}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// provider returns the real llm client for the server.
func (m *wireModel) provider() llm.Provider {
	m.t.Helper()
	cfg := llm.Config{Provider: m.wire, Model: "scripted-model", APIKey: "test-key", Timeout: 10 * time.Second, MaxRetries: 1}
	cfg.BaseURL = m.srv.URL
	if m.wire == wireOpenAI {
		cfg.BaseURL += "/v1"
	}
	p, err := llm.New(cfg)
	if err != nil {
		m.t.Fatalf("llm.New: %v", err)
	}
	return p
}

// received returns the requests so far.
func (m *wireModel) received() []*wireRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*wireRequest(nil), m.requests...)
}

func (m *wireModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, err := parseWire(m.wire, body)
	if err != nil {
		m.t.Errorf("scripted %s server: bad request %s: %v", m.wire, body, err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	n := len(m.requests)
	m.requests = append(m.requests, req)
	next := m.after
	if n < len(m.turns) {
		next = m.turns[n]
	}
	m.mu.Unlock()
	if next == nil {
		m.t.Errorf("scripted model: request %d is past the script (%d turns); last message %q", n+1, len(m.turns), req.last().Text)
		http.Error(w, `{"error":{"message":"past the script"}}`, http.StatusBadRequest)
		return
	}
	a := next(m.t, req)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, m.body(a))
}

func (m *wireModel) nextID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids++
	if m.wire == wireOpenAI {
		return fmt.Sprintf("call_%d", m.ids)
	}
	return fmt.Sprintf("toolu_%d", m.ids)
}

// body is the reply in the server's wire format.
func (m *wireModel) body(a wireReply) string {
	in, out := a.In, a.Out
	if in == 0 {
		in = 10
	}
	if out == 0 {
		out = 5
	}
	if m.wire == wireOpenAI {
		msg := map[string]any{"role": "assistant", "content": nil}
		if a.Text != "" {
			msg["content"] = a.Text
		}
		if a.Refusal != "" {
			msg["refusal"] = a.Refusal
		}
		finish := "stop"
		var calls []any
		for _, c := range a.Calls {
			id := cmpOr(c.ID, m.nextID())
			args := c.Args
			if c.Twice {
				args = mustJSON(c.Args)
			}
			calls = append(calls, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": c.Name, "arguments": args}})
			finish = "tool_calls"
		}
		if calls != nil {
			msg["tool_calls"] = calls
		}
		return mustJSON(map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1700000000, "model": "scripted-model",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": cmpOr(a.Stop, finish), "logprobs": nil}},
			"usage":   map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}})
	}
	content := []any{}
	if a.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": a.Text})
	}
	stop := "end_turn"
	for _, c := range a.Calls {
		id := cmpOr(c.ID, m.nextID())
		var input any = json.RawMessage(c.Args)
		if !json.Valid([]byte(c.Args)) {
			input = c.Args // Anthropic's input is an object; a broken one travels as a string
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": input})
		stop = "tool_use"
	}
	return mustJSON(map[string]any{"id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted-model",
		"content": content, "stop_reason": cmpOr(a.Stop, stop), "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": in, "output_tokens": out}})
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// parseWire reads a request body of either format into one shape.
func parseWire(wire string, body []byte) (*wireRequest, error) {
	req := &wireRequest{}
	if wire == wireOpenAI {
		var in struct {
			Messages []struct {
				Role       string          `json:"role"`
				Content    json.RawMessage `json:"content"`
				ToolCallID string          `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"messages"`
			Tools []struct{ Function struct{ Name string } } `json:"tools"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		for _, msg := range in.Messages {
			text := openAIText(msg.Content)
			if msg.Role == "system" {
				req.System += text
				continue
			}
			out := wireMessage{Role: msg.Role, Text: text, ToolCallID: msg.ToolCallID}
			for _, tc := range msg.ToolCalls {
				out.ToolCalls = append(out.ToolCalls, wireCall{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
			}
			req.Messages = append(req.Messages, out)
		}
		for _, t := range in.Tools {
			req.Tools = append(req.Tools, t.Function.Name)
		}
		return req, nil
	}
	var in struct {
		System   []struct{ Text string } `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type, Text, ID, Name string
				Input                json.RawMessage `json:"input"`
				ToolUseID            string          `json:"tool_use_id"`
				Content              []struct{ Text string }
			} `json:"content"`
		} `json:"messages"`
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	for _, s := range in.System {
		req.System += s.Text
	}
	for _, msg := range in.Messages {
		cur := wireMessage{Role: msg.Role}
		flush := func() {
			if cur.Text != "" || len(cur.ToolCalls) > 0 {
				req.Messages = append(req.Messages, cur)
			}
			cur = wireMessage{Role: msg.Role}
		}
		for _, b := range msg.Content {
			switch b.Type {
			case "text":
				cur.Text += b.Text
			case "tool_use":
				cur.ToolCalls = append(cur.ToolCalls, wireCall{ID: b.ID, Name: b.Name, Args: string(b.Input)})
			case "tool_result":
				flush()
				var text strings.Builder
				for _, c := range b.Content {
					text.WriteString(c.Text)
				}
				req.Messages = append(req.Messages, wireMessage{Role: "tool", ToolCallID: b.ToolUseID, Text: text.String()})
			}
		}
		flush()
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	return req, nil
}

// openAIText reads OpenAI content: a string or text parts.
func openAIText(raw json.RawMessage) string {
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

// Turn constructors.

// say answers with a fixed reply.
func say(a wireReply) wireTurn { return func(testing.TB, *wireRequest) wireReply { return a } }

// callTool answers with one call of name with args (any value, as JSON;
// a string is sent as the raw arguments).
func callTool(name string, args any) wireTurn {
	return say(wireReply{Calls: []wireCall{toCall(name, args)}})
}

// toCall makes a call of name with args (a string is raw JSON).
func toCall(name string, args any) wireCall {
	raw, ok := args.(string)
	if !ok {
		raw = mustJSON(args)
	}
	return wireCall{Name: name, Args: raw}
}

// prose answers with text and no call.
func prose(text string) wireTurn { return say(wireReply{Text: text}) }

// seeing asserts that the results answering the model's last reply hold
// each of want, then answers as next does.
func seeing(next wireTurn, want ...string) wireTurn {
	return func(t testing.TB, req *wireRequest) wireReply {
		var got strings.Builder
		for _, m := range req.toolResults() {
			got.WriteString(m.Text + "\n")
		}
		for _, w := range want {
			if !strings.Contains(got.String(), w) {
				t.Errorf("the model was shown %q; want it to hold %q", got.String(), w)
			}
		}
		return next(t, req)
	}
}

// The native sandbox, shared by the tests of this package.

var (
	nativeOnce sync.Once
	native     *linux.Runtime
	nativeErr  error
)

// TestMain closes the shared native runtime after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if native != nil {
		_ = native.Close()
	}
	os.Exit(code)
}

// nativeRuntime returns the shared native runtime on the datascience
// image (bash, git, patch, pytest); it needs root and the image.
func nativeRuntime(t testing.TB) *linux.Runtime {
	t.Helper()
	testenv.Root(t)
	img := testenv.Image(t, "datascience")
	nativeOnce.Do(func() {
		native, nativeErr = linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest})
	})
	if nativeErr != nil {
		t.Fatalf("linux.New: %v", nativeErr)
	}
	return native
}

// tarGz packs files (name → content) as a gzip'd tar, as FromDir does;
// files named *.sh are executable.
func tarGz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	tw := tar.NewWriter(z)
	for name, content := range files {
		mode := int64(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, content); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The tiny repository of the tests: a module with a bug (subtract adds)
// and its pytest tests, one failing before the fix and one passing.
var (
	calcBuggy = "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return a + b\n"
	calcTests = "from calc import add, subtract\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_subtract():\n    assert subtract(5, 3) == 2\n"
)

// calcTask is the task on the tiny repository, naming the failing test.
func calcTask(t testing.TB) Task {
	return Task{
		Repo:   Repo{Archive: tarGz(t, map[string]string{"calc.py": calcBuggy, "test_calc.py": calcTests})},
		Prompt: "test_calc.py::test_subtract fails: subtract(5, 3) gives 8. Fix the bug.",
		Tests:  []string{"test_calc.py::test_subtract", "test_calc.py::test_add"},
	}
}

// runWith runs the agent with model m on task, the shared native sandbox
// and short budgets unless cfg sets them; a run that cannot be carried
// out fails t.
func runWith(t *testing.T, m *wireModel, cfg Config, task Task) *Result {
	t.Helper()
	cfg.Model = m.provider()
	if cfg.Sandbox == nil {
		cfg.Sandbox = nativeRuntime(t)
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.MaxWallTime == 0 {
		cfg.MaxWallTime = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg, task)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// describeResult shows a result in a failure message.
func describeResult(res *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status=%s reason=%q submitted=%v steps=%d tokens=%d diff=%q", res.Status, res.Reason, res.Submitted, res.Trace.Budget.Steps, res.Trace.Budget.Tokens, res.Diff)
	for i, s := range res.Trace.Steps {
		fmt.Fprintf(&b, "\n  %d %s %s %.200q note=%.200q", i, s.Kind, s.Tool, s.Output, s.Note)
	}
	return b.String()
}
