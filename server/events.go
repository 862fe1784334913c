package server

import (
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
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
//
// A run's events carry an id: (service.Event.ID, its position in the run),
// and GET /v1/runs/{id}/events resumes after the one named by the
// Last-Event-ID header or, for clients that cannot set it, ?after=N (the
// header wins, as an EventSource reconnecting sends it to the URL it first
// opened); the events of POST /v1/runs?stream=1 are resumed there too.
// Its stream starts with a retry: of a second. Once nothing comes after
// the id, the answer is 204 No Content, which also stops an EventSource
// from reconnecting. A session cell's events have no id: a cell cannot be
// resumed.
// eventWriteTimeout bounds one event's write. The runtime delivers output
// synchronously (a slow reader slows the program down), so a client that
// stops reading without closing the connection must not hold the run, and
// its sandbox, past its limits: after a write times out the stream is
// dropped and the run goes on to its recorded end.
const eventWriteTimeout = 10 * time.Second

// reconnectDelay is the retry: a run's event stream sets: how long a
// client that lost it waits before resuming.
const reconnectDelay = time.Second

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

// resumePoint returns the position a run's stream resumes after: the
// Last-Event-ID header unless it is empty, or else ?after; 0 (from the
// start) without either. field names the one it came from.
func resumePoint(r *http.Request) (after int64, field string, apiErr *api.Error) {
	field = "Last-Event-ID"
	s := r.Header.Get(field)
	if s == "" {
		field = "after"
		if !r.URL.Query().Has(field) {
			return 0, field, nil
		}
		s = r.URL.Query().Get(field)
	}
	after, err := strconv.ParseInt(s, 10, 64)
	if err != nil || after < 0 {
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return 0, field, invalid(field, "must be a non-negative integer, the id of the last event received, got "+strconv.Quote(s))
	}
	return after, field, nil
}

// renameField returns err with the field of its input error renamed from
// old to field, for an error of the service about a parameter whose HTTP
// name differs.
func renameField(err error, old, field string) error {
	var ie *sandbox.InputError
	if errors.As(err, &ie) && ie.Field == old {
		return &sandbox.InputError{Field: field, Rule: ie.Rule}
	}
	return err
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
	name, b := eventData(event, v)
	es.sendJSON(name, 0, b)
}

// sendJSON writes one event whose data is the JSON document b, with id
// unless it is 0.
func (es *eventStream) sendJSON(event string, id int64, b []byte) {
	msg := make([]byte, 0, len(event)+len(b)+40)
	if id != 0 {
		msg = append(msg, "id: "...)
		msg = strconv.AppendInt(msg, id, 10)
		msg = append(msg, '\n')
	}
	msg = append(msg, "event: "...)
	msg = append(msg, event...)
	msg = append(msg, "\ndata: "...)
	msg = append(msg, b...) // JSON has no raw newlines
	msg = append(msg, "\n\n"...)
	es.write(msg)
}

// setRetry tells the client how long to wait before reconnecting.
func (es *eventStream) setRetry(d time.Duration) {
	es.write(append(strconv.AppendInt([]byte("retry: "), d.Milliseconds(), 10), '\n', '\n'))
}

// emit sends e as its event, with its id; it reports false once the
// client is gone or stalled, so that whoever feeds the stream stops.
func (es *eventStream) emit(e service.Event) bool {
	var v any = e.Output
	switch {
	case e.Agent != nil:
		v = e.Agent.Data()
	case e.Kind == service.EventRun:
		v = e.Run
	case e.Kind == service.EventResult:
		v = e.Result
	}
	name, b := eventData(string(e.Kind), v)
	es.sendJSON(name, e.ID, b)
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

// streamLazily answers with the events start passes to emit, starting the
// event stream at the first one: an error returned before any event (bad
// input, 404, 429) keeps its HTTP status and JSON body (what names the
// operation in the log); once the stream has started, it just ends.
func (s *Server) streamLazily(w http.ResponseWriter, what string, start func(emit func(service.Event) bool) error) {
	var es *eventStream
	err := start(func(e service.Event) bool {
		if es == nil {
			es = startEventStream(w)
		}
		return es.emit(e)
	})
	if es == nil {
		if err != nil {
			s.fail(w, what, err)
		}
		return
	}
	es.close()
}

// serveEvents answers a resumable stream of events: 204 when events is
// nil (nothing comes after the point asked for), else the events, with
// the delay to wait before resuming.
func (s *Server) serveEvents(w http.ResponseWriter, events iter.Seq[service.Event]) {
	if events == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	es := startEventStream(w)
	defer es.close()
	es.setRetry(reconnectDelay)
	for e := range events {
		if !es.emit(e) {
			return
		}
	}
}
