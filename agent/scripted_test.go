package agent_test

// The harness of the end-to-end agent tests (agent_test.go). No language
// model can run here, so the model is SCRIPTED: a local httptest server
// speaks a provider's real wire format (OpenAI chat completions or
// Anthropic messages) and answers each request from a script, while the
// real llm provider clients (llm.New) talk to it and the real native
// sandbox (linux.New) runs the code the script makes the agent run.
//
// The server tells the agent's roles apart by their system prompt: the
// planner's starts "You decide whether", the verifier's "You check an
// agent's work", and anything else is the coder. A script therefore
// scripts the coder's turns (each a function of the request the model
// received, so a test can assert what the model was shown) and just sets
// the planner's and the verifier's answers. Every request is recorded,
// normalised to one shape for both wire formats, with its raw body.
//
// The planner and the verifier ask for structured output (a schema). The
// server answers them in plain text, as a server that ignores the schema
// does, unless the script says to answer the structured way the request
// asked (Structured: OpenAI content, Anthropic a call of the forced tool)
// or to refuse the schema with a 400 naming the field (RejectSchema), as
// some OpenAI-compatible servers do.

import (
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

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The wire formats the scripted server speaks.
const (
	wireOpenAI    = llm.ProviderOpenAI
	wireAnthropic = llm.ProviderAnthropic
)

// The roles a request is sent for, told apart by the system prompt.
const (
	rolePlan   = "plan"
	roleVerify = "verify"
	roleCoder  = "coder"
)

// Default usage the scripted model reports for every reply.
const (
	defaultIn  = 10
	defaultOut = 5
)

// okVerdict is the verifier's answer when the script sets none.
const okVerdict = `{"ok": true, "reason": "the output answers the task"}`

// call is one tool call in a scripted reply. An empty ID is filled in by
// the server ("call_N" for OpenAI, "toolu_N" for Anthropic, N counting
// from 1 over the server's life).
type call struct {
	ID, Name string
	// Args is the arguments JSON as the model writes it; on the OpenAI
	// wire it may be malformed (it travels as a string).
	Args string
	// As is how the arguments travel: "" as the wire format says (a
	// string on OpenAI's, an object on Anthropic's), argsObject as a JSON
	// object on OpenAI's wire, argsTwice as a string encoded twice (a
	// string holding the string), as some compatible servers send them.
	As string
}

// The ways of sending arguments, for call.As.
const (
	argsObject = "object"
	argsTwice  = "twice"
)

// answer is what the scripted server sends back for one request.
type answer struct {
	// Status, if set and not 200, is an HTTP error status sent with Header
	// and the provider's error body (or Raw).
	Status int
	Header map[string]string
	// Raw, if set, is sent verbatim as the body (a garbage reply).
	Raw string
	// Text and Calls make a normal reply.
	Text  string
	Calls []call
	// Stop, if set, is the finish_reason (OpenAI) or stop_reason
	// (Anthropic) in place of the one the reply implies: "length" or
	// "max_tokens" for a reply cut at the token limit, "refusal".
	Stop string
	// Refusal is OpenAI's refusal field (content null).
	Refusal string
	// In and Out are the usage reported; zero means defaultIn/defaultOut.
	In, Out int
}

// message is a conversation message as the model received it, the same
// shape for both wire formats. Anthropic tool_result blocks become
// messages of role "tool", one per block.
type message struct {
	Role       string
	Text       string
	ToolCallID string
	ToolCalls  []call
}

// request is one request the server received, and what it answered.
type request struct {
	Role     string // rolePlan, roleVerify or roleCoder
	Body     []byte // the raw request body
	System   string
	Messages []message // without the system prompt
	Tools    []string  // names of the tools offered
	// Schema names the structured output asked for: OpenAI's
	// response_format json_schema, Anthropic's forced tool; "" for none.
	Schema string
	Status int // the HTTP status answered
}

// last returns the last message of the conversation.
func (r *request) last() message {
	if len(r.Messages) == 0 {
		return message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// turn is one scripted coder request: it sees what the model received
// and returns the reply. It may assert with t.Errorf (never t.Fatal: it
// runs on the server's goroutine).
type turn func(t *testing.T, req *request) answer

// script drives a scripted model.
type script struct {
	// Plan is the planner's reply; empty means "CODE".
	Plan string
	// Verdicts are the verifier's replies in order; once used up, every
	// verdict is okVerdict.
	Verdicts []string
	// Coder are the coder's requests in order (one per HTTP request, so a
	// 429 and its retry are two). A coder request past the end fails the
	// test and is answered 400, which ends the run.
	Coder []turn
	// Structured answers the planner and the verifier in the structured
	// way their request asked for; otherwise they get plain text.
	Structured bool
	// RejectSchema answers a request asking for structured output with a
	// 400 naming the field (response_format, tool_choice).
	RejectSchema bool
}

// Turn constructors.

// reply answers with a as it is.
func reply(a answer) turn { return func(*testing.T, *request) answer { return a } }

// execute answers with one execute_code call running code.
func execute(code string) turn {
	return toolCall("execute_code", mustJSON(map[string]string{"code": code}))
}

// final answers with one final_answer call.
func final(ans string) turn {
	return toolCall("final_answer", mustJSON(map[string]string{"answer": ans}))
}

// toolCall answers with one call of name with the raw arguments args.
func toolCall(name, args string) turn {
	return reply(answer{Calls: []call{{Name: name, Args: args}}})
}

// text answers with plain text and no tool call.
func text(s string) turn { return reply(answer{Text: s}) }

// httpError answers with an HTTP error status and, if retryAfter is not
// empty, a Retry-After header.
func httpError(status int, retryAfter string) turn {
	a := answer{Status: status}
	if retryAfter != "" {
		a.Header = map[string]string{"Retry-After": retryAfter}
	}
	return reply(a)
}

// checked runs check on the request, then answers as next does.
func checked(check func(t *testing.T, req *request), next turn) turn {
	return func(t *testing.T, req *request) answer {
		check(t, req)
		return next(t, req)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// scriptedModel is the local server playing the model.
type scriptedModel struct {
	t      *testing.T
	wire   string
	srv    *httptest.Server
	script script

	mu       sync.Mutex
	requests []*request
	coderN   int // coder requests answered
	verifyN  int // verifier requests answered
	ids      int // tool-call IDs handed out
}

// newScriptedModel starts a server speaking wire, closed when t ends.
func newScriptedModel(t *testing.T, wire string, s script) *scriptedModel {
	t.Helper()
	m := &scriptedModel{t: t, wire: wire, script: s}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// provider returns the real llm client for the server's wire format.
func (m *scriptedModel) provider() llm.Provider {
	m.t.Helper()
	cfg := llm.Config{Provider: m.wire, Model: "scripted-model", APIKey: "test-key", Timeout: 10 * time.Second, MaxRetries: 2}
	if m.wire == wireOpenAI {
		cfg.BaseURL = m.srv.URL + "/v1"
	} else {
		cfg.BaseURL = m.srv.URL
	}
	p, err := llm.New(cfg)
	if err != nil {
		m.t.Fatalf("llm.New: %v", err)
	}
	return p
}

// all returns every request received, in order.
func (m *scriptedModel) all() []*request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*request(nil), m.requests...)
}

// of returns the requests received for role, in order.
func (m *scriptedModel) of(role string) []*request {
	var out []*request
	for _, r := range m.all() {
		if r.Role == role {
			out = append(out, r)
		}
	}
	return out
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	t := m.t
	path := "/v1/chat/completions"
	if m.wire == wireAnthropic {
		path = "/v1/messages"
	}
	if r.Method != http.MethodPost || r.URL.Path != path {
		t.Errorf("scripted %s server: got %s %s, want POST %s", m.wire, r.Method, r.URL.Path, path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("scripted %s server: Authorization = %q, want Bearer test-key", m.wire, got)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("scripted server: reading body: %v", err)
		return
	}
	req, err := m.parse(body)
	if err != nil {
		t.Errorf("scripted %s server: request body %s: %v", m.wire, body, err)
		m.write(w, req, answer{Status: http.StatusBadRequest})
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	var next turn
	switch {
	case req.Schema != "" && m.script.RejectSchema:
		m.mu.Unlock()
		m.write(w, req, answer{Status: http.StatusBadRequest, Raw: m.schemaRefusal()})
		return
	case req.Role == rolePlan:
		next = m.judge(req, cmpOr(m.script.Plan, "CODE"))
	case req.Role == roleVerify:
		verdict := okVerdict
		if m.verifyN < len(m.script.Verdicts) {
			verdict = m.script.Verdicts[m.verifyN]
		}
		m.verifyN++
		next = m.judge(req, verdict)
	default:
		if m.coderN < len(m.script.Coder) {
			next = m.script.Coder[m.coderN]
		}
		m.coderN++
	}
	n := m.coderN
	m.mu.Unlock()
	if next == nil {
		t.Errorf("scripted model: coder request %d is not in the script (%d turns); last message: %q", n, len(m.script.Coder), req.last().Text)
		m.write(w, req, answer{Status: http.StatusBadRequest})
		return
	}
	m.write(w, req, next(t, req))
}

// judge answers the planner or the verifier with s: plain text, or the
// structured way the request asked for when the script says so.
func (m *scriptedModel) judge(req *request, s string) turn {
	if !m.script.Structured || req.Schema == "" || m.wire == wireOpenAI {
		return text(s) // OpenAI's structured reply is the content
	}
	return reply(answer{Calls: []call{{Name: req.Schema, Args: s}}})
}

// schemaRefusal is a 400 body refusing structured output, naming the
// field: vLLM's validation error for response_format; for Anthropic, the
// API's invalid_request_error for tool_choice.
func (m *scriptedModel) schemaRefusal() string {
	if m.wire == wireOpenAI {
		return `{"object":"error","message":"[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}]","type":"BadRequestError","param":null,"code":400}`
	}
	return `{"type":"error","error":{"type":"invalid_request_error","message":"tool_choice: Extra inputs are not permitted"}}`
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// write sends a in the server's wire format and records the status.
func (m *scriptedModel) write(w http.ResponseWriter, req *request, a answer) {
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	if req != nil {
		m.mu.Lock()
		req.Status = status
		m.mu.Unlock()
	}
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	var body string
	switch {
	case a.Raw != "":
		body = a.Raw
	case status != http.StatusOK && m.wire == wireOpenAI:
		body = fmt.Sprintf(`{"error":{"message":"scripted HTTP %d","type":"scripted_error","param":null,"code":null}}`, status)
	case status != http.StatusOK:
		body = fmt.Sprintf(`{"type":"error","error":{"type":"scripted_error","message":"scripted HTTP %d"}}`, status)
	case m.wire == wireOpenAI:
		body = m.openAIBody(a)
	default:
		body = m.anthropicBody(a)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// nextID returns a fresh tool-call ID.
func (m *scriptedModel) nextID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids++
	if m.wire == wireOpenAI {
		return fmt.Sprintf("call_%d", m.ids)
	}
	return fmt.Sprintf("toolu_%d", m.ids)
}

func usage(a answer) (int, int) {
	in, out := a.In, a.Out
	if in == 0 {
		in = defaultIn
	}
	if out == 0 {
		out = defaultOut
	}
	return in, out
}

// openAIBody is a chat.completion object.
func (m *scriptedModel) openAIBody(a answer) string {
	type fn struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}
	type toolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if a.Text != "" {
		msg["content"] = a.Text
	}
	if a.Refusal != "" {
		msg["refusal"] = a.Refusal
	}
	finish := "stop"
	if len(a.Calls) > 0 {
		var calls []toolCall
		for _, c := range a.Calls {
			id := c.ID
			if id == "" {
				id = m.nextID()
			}
			var args any = c.Args
			switch c.As {
			case argsObject:
				args = json.RawMessage(c.Args)
			case argsTwice:
				args = mustJSON(c.Args)
			}
			calls = append(calls, toolCall{ID: id, Type: "function", Function: fn{Name: c.Name, Arguments: args}})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	finish = cmpOr(a.Stop, finish)
	in, out := usage(a)
	return mustJSON(map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1700000000, "model": "scripted-model",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

// anthropicBody is a messages API Message with text and tool_use blocks.
func (m *scriptedModel) anthropicBody(a answer) string {
	content := []any{}
	if a.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": a.Text})
	}
	stop := "end_turn"
	for _, c := range a.Calls {
		id := c.ID
		if id == "" {
			id = m.nextID()
		}
		var input any = json.RawMessage(c.Args)
		if c.As == argsTwice {
			input = c.Args
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": input})
		stop = "tool_use"
	}
	stop = cmpOr(a.Stop, stop)
	in, out := usage(a)
	return mustJSON(map[string]any{
		"id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted-model",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": in, "output_tokens": out},
	})
}

// parse decodes a request body of the server's wire format.
func (m *scriptedModel) parse(body []byte) (*request, error) {
	req := &request{Body: body}
	var err error
	if m.wire == wireOpenAI {
		err = parseOpenAI(body, req)
	} else {
		err = parseAnthropic(body, req)
	}
	switch {
	case strings.HasPrefix(req.System, "You decide whether"):
		req.Role = rolePlan
	case strings.HasPrefix(req.System, "You check an agent's work"):
		req.Role = roleVerify
	default:
		req.Role = roleCoder
	}
	return req, err
}

// contentText reads OpenAI content: a string or an array of text parts.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func parseOpenAI(body []byte, req *request) error {
	var in struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		ResponseFormat struct {
			JSONSchema struct {
				Name string `json:"name"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return err
	}
	req.Schema = in.ResponseFormat.JSONSchema.Name
	for _, msg := range in.Messages {
		if msg.Role == "system" {
			req.System += contentText(msg.Content)
			continue
		}
		out := message{Role: msg.Role, Text: contentText(msg.Content), ToolCallID: msg.ToolCallID}
		for _, tc := range msg.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, call{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, out)
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	return nil
}

func parseAnthropic(body []byte, req *request) error {
	var in struct {
		System   []struct{ Text string } `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		ToolChoice struct {
			Type, Name string
		} `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return err
	}
	if in.ToolChoice.Type == "tool" {
		req.Schema = in.ToolChoice.Name
	}
	for _, s := range in.System {
		req.System += s.Text
	}
	for _, msg := range in.Messages {
		cur := message{Role: msg.Role}
		flush := func() {
			if cur.Text != "" || len(cur.ToolCalls) > 0 {
				req.Messages = append(req.Messages, cur)
			}
			cur = message{Role: msg.Role}
		}
		for _, b := range msg.Content {
			switch b.Type {
			case "text":
				cur.Text += b.Text
			case "tool_use":
				cur.ToolCalls = append(cur.ToolCalls, call{ID: b.ID, Name: b.Name, Args: string(b.Input)})
			case "tool_result":
				flush()
				var text strings.Builder
				for _, c := range b.Content {
					text.WriteString(c.Text)
				}
				req.Messages = append(req.Messages, message{Role: "tool", ToolCallID: b.ToolUseID, Text: text.String()})
			}
		}
		flush()
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	return nil
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

// nativeRuntime returns the shared native runtime; it needs root
// (cgroups, mount namespaces).
func nativeRuntime(t *testing.T) *linux.Runtime {
	t.Helper()
	testenv.Root(t)
	nativeOnce.Do(func() { native, nativeErr = linux.New(linux.Options{}) })
	if nativeErr != nil {
		t.Fatalf("linux.New: %v", nativeErr)
	}
	return native
}

// countingRuntime wraps a session runtime to count what the agent asked
// of it, and to list each session's files just before it closes.
type countingRuntime struct {
	rt sandbox.SessionRuntime

	mu       sync.Mutex
	sessions int
	execs    []string // the code of every Exec, in order
	files    []sandbox.FileInfo
}

func (c *countingRuntime) NewSession(ctx context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	c.mu.Lock()
	c.sessions++
	c.mu.Unlock()
	s, err := c.rt.NewSession(ctx, req)
	if err != nil {
		return nil, err
	}
	return &countingSession{Session: s, c: c}, nil
}

// execCount returns how many cells the agent ran.
func (c *countingRuntime) execCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.execs)
}

// closedFiles returns the file names the last session held when closed.
func (c *countingRuntime) closedFiles() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, f := range c.files {
		names = append(names, f.Name)
	}
	return names
}

type countingSession struct {
	sandbox.Session
	c *countingRuntime
}

func (s *countingSession) Exec(ctx context.Context, cell sandbox.Cell) (sandbox.Result, error) {
	s.c.mu.Lock()
	s.c.execs = append(s.c.execs, cell.Code)
	s.c.mu.Unlock()
	return s.Session.Exec(ctx, cell)
}

func (s *countingSession) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	files, err := s.Session.ListFiles(ctx)
	if err == nil {
		s.c.mu.Lock()
		s.c.files = files
		s.c.mu.Unlock()
	}
	return s.Session.Close()
}

// harness is a scripted model and the native sandbox, ready for a run.
type harness struct {
	model   *scriptedModel
	sandbox *countingRuntime
	// lastEventAttempt is the attempt of the last progress event.
	lastEventAttempt int
}

// newHarness starts a scripted model speaking wire and wraps the native
// sandbox; it needs root.
func newHarness(t *testing.T, wire string, s script) *harness {
	t.Helper()
	rt := nativeRuntime(t)
	return &harness{model: newScriptedModel(t, wire, s), sandbox: &countingRuntime{rt: rt}}
}

// run runs the agent on task with cfg, its Model filled in, and its
// Sandbox unless cfg sets one (and a 10 s cell timeout unless cfg sets
// one). A run that cannot be carried out at all fails t.
func (h *harness) run(t *testing.T, cfg agent.Config, task agent.Task) *agent.Trace {
	t.Helper()
	cfg.Model = h.model.provider()
	if cfg.Sandbox == nil {
		cfg.Sandbox = h.sandbox
	}
	if cfg.CellTimeout == 0 {
		cfg.CellTimeout = 10 * time.Second
	}
	onEvent := cfg.OnEvent
	cfg.OnEvent = func(e agent.Event) {
		h.lastEventAttempt = e.Attempt
		if onEvent != nil {
			onEvent(e)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	trace, err := agent.Run(ctx, cfg, task)
	if err != nil {
		t.Fatalf("agent.Run: %v", err)
	}
	return trace
}

// kinds lists the kinds of the trace's steps, in order.
func kinds(trace *agent.Trace) string {
	var out []string
	for _, s := range trace.Steps {
		out = append(out, string(s.Kind))
	}
	return strings.Join(out, " ")
}

// stepsOf returns the trace's steps of kind.
func stepsOf(trace *agent.Trace, kind agent.StepKind) []agent.Step {
	var out []agent.Step
	for _, s := range trace.Steps {
		if s.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

// dump shows a trace in a failure message.
func dump(trace *agent.Trace) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status=%s reason=%q answer=%q attempts=%d (failed %d) tokens=%d exec_ms=%.0f steps=[%s]",
		trace.Status, trace.Reason, trace.Answer, trace.Budget.Attempts, trace.Budget.FailedAttempts, trace.Budget.Tokens, trace.Budget.ExecMS, kinds(trace))
	for i, s := range trace.Steps {
		if s.Note != "" {
			fmt.Fprintf(&b, "\n  step %d %s note: %.300s", i, s.Kind, s.Note)
		}
		if s.Result != nil {
			fmt.Fprintf(&b, "\n  step %d %s result: %s %q stdout=%q", i, s.Kind, s.Result.Status, s.Result.Reason, s.Result.Stdout)
		}
	}
	return b.String()
}
