package e2bapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// lineWriteTimeout bounds the write of one line of /execute's answer.
// The runtime hands output over synchronously (a slow reader slows the
// cell down), so a client that stops reading without closing the
// connection must not hold the cell past its limits: after a write times
// out, the answer is dropped and the cell goes on to its recorded end.
const lineWriteTimeout = 10 * time.Second

// executeBody is the body of POST /execute.
type executeBody struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// ndjson writes an answer of newline-delimited JSON; its methods are
// safe for concurrent use.
type ndjson struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	failed bool // a write failed: the client is gone or stalled
}

// start sends the status and headers at once, so that the client's
// timeout for the answer to begin (the SDK's requestTimeoutMs) never
// counts the cell's time: from here the SDK's timeoutMs bounds it.
func (s *ndjson) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	if s.rc.Flush() != nil {
		s.failed = true
	}
}

// send writes v as one line, at once.
func (s *ndjson) send(v any) { s.write(v, true) }

// add writes v as one line, sent with the next flush (the end of the
// answer, at the latest): the lines after the cell go out together.
func (s *ndjson) add(v any) { s.write(v, false) }

// write writes v as one line, flushed if flush is set.
func (s *ndjson) write(v any, flush bool) {
	b, err := json.Marshal(v)
	if err != nil { // our own types always marshal
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return
	}
	if err := s.rc.SetWriteDeadline(time.Now().Add(lineWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.failed = true
		return
	}
	if _, err := s.w.Write(append(b, '\n')); err != nil || flush && s.rc.Flush() != nil {
		s.failed = true
	}
}

// textStream turns a stream's chunks into text: a UTF-8 sequence a chunk
// cuts is held back until the next one completes it.
type textStream struct{ held []byte }

// text returns chunk's text, with what was held before; at the end
// (final) nothing is held back.
func (t *textStream) text(chunk []byte, final bool) string {
	b := append(t.held, chunk...)
	t.held = nil
	if !final {
		// A rune starts at most utf8.UTFMax-1 bytes before the end.
		for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					t.held = append([]byte(nil), b[i:]...)
					b = b[:i]
				}
				break
			}
		}
	}
	return string(b)
}

// execute serves the code interpreter's POST /execute: the cell runs in
// the sandbox's session, through the service (validated, its code policy
// checked, recorded, redacted), and its output is streamed as it comes.
//
// Refusals the SDK shows only by status (it raises "400 Bad Request"
// without the body) are answered as the cell's error instead, with the
// field and the rule: a language other than Python, env_vars, a cell the
// service refuses before it runs.
// A sandbox that no longer runs is a 502, as E2B answers it (the SDK
// raises a TimeoutError saying the sandbox is gone); an unknown context
// a 404. Once the cell is accepted the answer starts at once: a cell
// that ends on a limit ends its answer with the error
// (TimeoutError, ...) and end_of_execution like any other.
func (h *Handler) execute(w http.ResponseWriter, r *http.Request) {
	e, err := h.sandboxOf(r)
	if err != nil {
		h.fail(w, "execute", err, nil)
		return
	}
	var body executeBody
	payload, err := h.readJSON(w, r, e.tenant(), &body)
	if err != nil {
		h.fail(w, "read body", err, nil)
		return
	}
	defer payload.Release()
	c := e.contexts.get(defaultContextID)
	if body.ContextID != "" {
		if c = e.contexts.get(body.ContextID); c == nil {
			writeError(w, errorf(http.StatusNotFound, "code context %q not found in sandbox %s", cut(body.ContextID, 80), e.id))
			return
		}
	}
	out := &ndjson{w: w, rc: http.NewResponseController(w)}
	out.start()
	defer out.send(endMsg)
	cell := sandbox.Cell{Code: body.Code}
	if err := h.refusal(body, &cell, c); err != nil {
		out.send(refusalMsg(err))
		return
	}
	var streams = map[sandbox.Stream]*textStream{sandbox.StreamStdout: {}, sandbox.StreamStderr: {}}
	cell.OnOutput = func(stream sandbox.Stream, chunk []byte) {
		if text := streams[stream].text(chunk, false); text != "" {
			out.send(outputMsg{Type: string(stream), Text: text, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
		}
	}
	resp, err := e.session().ExecRecorded(r.Context(), cell)
	for name, s := range streams {
		if text := s.text(nil, true); text != "" {
			out.send(outputMsg{Type: string(name), Text: text, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
		}
	}
	if err != nil {
		var se *service.Error
		if errors.As(err, &se) && se.Kind == service.KindSessionClosed {
			h.close(e)
			out.send(errorMsg{Type: "error", Name: "SandboxError", Value: "the sandbox ended while the cell ran: " + se.Message})
			return
		}
		if ae := answerOf(err, nil); ae != nil {
			out.send(refusalMsg(ae))
			return
		}
		h.log.Error("e2b: execute", "sandbox", e.id, "err", err)
		out.send(errorMsg{Type: "error", Name: "InternalError", Value: "the server failed to run the cell"})
		return
	}
	for _, m := range resultMsgs(resp.Result) {
		out.add(m)
	}
	if m := errorOf(resp.Result); m != nil {
		out.add(m)
	}
	out.add(countMsg{Type: "number_of_executions", ExecutionCount: e.contexts.counted(c)})
}

// refusal checks what a cell asks of the interpreter beyond its code,
// and places it in its context's namespace.
func (h *Handler) refusal(body executeBody, cell *sandbox.Cell, c *codeContext) error {
	if body.Language != "" && body.ContextID == "" {
		if err := checkLanguage("language", body.Language); err != nil {
			return err
		}
	}
	if len(body.EnvVars) > 0 {
		// Setting variables around one cell would take code of the
		// platform's own in the interpreter, which the code policy could
		// not tell from the user's: refused rather than half done.
		return invalid("env_vars", "must be empty: a cell cannot have variables of its own here; set them for the whole sandbox with envs at Sandbox.create")
	}
	cell.Context = contextName(c)
	return nil
}

// refusalMsg is the error message of a cell refused before it ran.
func refusalMsg(err error) errorMsg {
	name, value := "Error", err.Error()
	var ae *apiError
	if errors.As(err, &ae) {
		switch ae.Code {
		case http.StatusBadRequest:
			name = "InvalidArgumentError"
		case http.StatusTooManyRequests:
			name = "RateLimitError"
		}
	}
	return errorMsg{Type: "error", Name: name, Value: value}
}
