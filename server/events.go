package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/service"
)

// Streaming (?stream=1 on POST /v1/runs and POST /v1/sessions/{id}/exec,
// and GET /v1/runs/{id}/events) answers with Server-Sent Events instead of
// one JSON document:
//
//	event: run      {"id": ..., "status": "queued"}   (runs only, first)
//	event: stdout   "text" or {"base64": "..."}       (a sandbox.Data)
//	event: stderr   the same, for standard error
//	event: result   the api.RunResponse or cell Result, as without streaming
//	event: error    an Error object, if the server failed mid-stream
//
// The output events are redacted line by line (policy.StreamRedactor) and
// their concatenation per stream equals the result's stdout and stderr,
// except in the rare cases StreamRedactor documents. Errors found before
// anything is streamed (bad input, 401, 404, 429) keep their HTTP status
// and JSON body.

// eventWriteTimeout bounds one event's write. The runtime delivers output
// synchronously (a slow reader slows the program down), so a client that
// stops reading without closing the connection must not hold the run, and
// its sandbox, past its limits: after a write times out the stream is
// dropped and the run goes on to its recorded end.
const eventWriteTimeout = 10 * time.Second

// heartbeatInterval is how often an idle stream gets a comment line, so
// that proxies and clients do not time out a quiet program.
const heartbeatInterval = 15 * time.Second

// eventStream writes Server-Sent Events; its methods are safe for
// concurrent use.
type eventStream struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	failed bool // a write failed: the client is gone
	stop   chan struct{}
	done   sync.WaitGroup
}

// startEventStream sends the event-stream headers and starts heartbeats;
// close stops them.
func startEventStream(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	es := &eventStream{w: w, rc: http.NewResponseController(w), stop: make(chan struct{})}
	es.flush()
	es.done.Go(func() {
		t := time.NewTicker(heartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-es.stop:
				return
			case <-t.C:
				es.write([]byte(": keep-alive\n\n"))
			}
		}
	})
	return es
}

// eventData encodes v as the data of the event called name. Our own types
// always marshal; were one not to, the event becomes an internal error.
func eventData(name string, v any) (string, []byte) {
	b, err := json.Marshal(v)
	if err != nil {
		return "error", []byte(`{"code":"internal","message":"unencodable event"}`)
	}
	return name, b
}

// send writes one event whose data is v as JSON.
func (es *eventStream) send(event string, v any) {
	es.sendJSON(eventData(event, v))
}

// sendJSON writes one event whose data is the JSON document b.
func (es *eventStream) sendJSON(event string, b []byte) {
	msg := make([]byte, 0, len(event)+len(b)+16)
	msg = append(msg, "event: "...)
	msg = append(msg, event...)
	msg = append(msg, "\ndata: "...)
	msg = append(msg, b...) // JSON has no raw newlines
	msg = append(msg, "\n\n"...)
	es.write(msg)
}

// emit sends e as its event; it reports false once the client is gone or
// stalled, so that whoever feeds the stream stops.
func (es *eventStream) emit(e service.Event) bool {
	switch e.Kind {
	case service.EventRun:
		es.send(string(e.Kind), e.Run)
	case service.EventResult:
		es.send(string(e.Kind), e.Result)
	default:
		es.send(string(e.Kind), e.Output)
	}
	return !es.broken()
}

// broken reports whether a write failed: the client is gone or stalled.
func (es *eventStream) broken() bool {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.failed
}

func (es *eventStream) write(b []byte) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.failed {
		return
	}
	if err := es.rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		es.failed = true
		return
	}
	if _, err := es.w.Write(b); err != nil {
		es.failed = true
		return
	}
	es.flush()
}

func (es *eventStream) flush() {
	if err := es.rc.Flush(); err != nil {
		es.failed = true
	}
}

// close stops the heartbeats; nothing is sent after it.
func (es *eventStream) close() {
	close(es.stop)
	es.done.Wait()
}
