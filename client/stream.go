package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxEventBytes bounds one event of a stream; the server's events are
// output chunks (64 KiB at most before encoding) and results.
const maxEventBytes = 256 << 20

// maxResumes bounds the reconnections of a resumable stream in a row that
// bring no event; a reconnection that brings one starts the count afresh.
const maxResumes = 3

// defaultRetry is how long to wait before a second or later reconnection
// in a row when the server set no retry: (the first is at once).
const defaultRetry = time.Second

// events says what to do with the events of a stream: output goes to
// output, the run's ID (the first event of a run, before it is queued) to
// run if set, and the result is decoded into result.
type events struct {
	output sandbox.OutputFunc
	run    func(id string)
	result any
	// resumable says a dropped connection is resumed by sending the
	// request again with Last-Event-ID: true for GET /v1/runs/{id}/events,
	// whose result is an *api.RunResponse, GET
	// /v1/agent-runs/{id}/events and GET
	// /v1/analyses/{id}/questions/{n}/events.
	resumable bool
	// other, if set, receives the events of the other names (an agent
	// run's steps, say); an error it returns ends the stream.
	other func(name string, data []byte) error
}

// stream sends r with in as its JSON body and ?stream=1, and reads the
// answer's events as ev says.
func (c *Client) stream(ctx context.Context, r request, in any, ev events) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("client: encode request: %w", err)
	}
	r.body, r.contentType = bytes.NewReader(b), "application/json"
	if r.query == nil {
		r.query = url.Values{}
	}
	r.query.Set("stream", "1")
	return c.readStream(ctx, r, ev)
}

// readStream sends r, whose answer is an event stream, and reads its
// events as ev says. An error event, the server failing once the stream
// had started, is returned as an *APIError, unwrapped.
//
// When ev is resumable, a connection that fails or ends before the result
// is resumed after the last event received, at most maxResumes times in a
// row without an event. The output is passed on once: when the server
// resumes with the result alone (a run that ended, whose record does not
// keep how stdout and stderr were interleaved), the output not yet passed
// on is passed from the result's.
func (c *Client) readStream(ctx context.Context, r request, ev events) error {
	st := &streamState{ev: ev, retry: defaultRetry}
	for failures := 0; ; failures++ {
		if failures > 1 {
			select {
			case <-ctx.Done():
			case <-time.After(st.retry):
			}
		}
		if ctx.Err() != nil && failures > 0 {
			return fmt.Errorf("client: %s %s: %w", r.method, r.path, ctx.Err())
		}
		if st.lastID != "" {
			r.header = http.Header{"Last-Event-ID": {st.lastID}}
		}
		received := st.received
		err := c.readOnce(ctx, r, st)
		var dropped *droppedError
		if !errors.As(err, &dropped) {
			return err
		}
		// Without an id to resume after, only a stream that brought nothing
		// can be sent again without repeating output.
		noID := st.lastID == "" && st.received > 0
		if !ev.resumable || noID || ctx.Err() != nil || failures >= maxResumes && st.received == received {
			return dropped.err
		}
		if st.received > received {
			failures = 0
		}
		st.resumed = true
	}
}

// droppedError is a stream that failed or ended before its result.
type droppedError struct{ err error }

func (e *droppedError) Error() string { return e.err.Error() }

// streamState is what a stream's reader knows across its connections.
type streamState struct {
	ev       events
	lastID   string        // the id of the last event, as Last-Event-ID
	retry    time.Duration // the server's retry:, defaultRetry without one
	received int           // events handled
	resumed  bool          // a connection was resumed
	passed   [2]int        // the output bytes passed on, stdout and stderr
}

// readOnce sends r and reads its events as st says, until the result. A
// failed connection or a stream cut before its result is a *droppedError.
func (c *Client) readOnce(ctx context.Context, r request, st *streamState) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) || ctx.Err() != nil {
			return err
		}
		return &droppedError{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent { // nothing after st.lastID
		return fmt.Errorf("client: %s %s: the server has no events after %s, and the result was not received", r.method, r.path, st.lastID)
	}
	got := false
	sr := sseReader{id: st.lastID}
	err = sr.read(resp.Body, func(name string, data []byte) error {
		prev := st.lastID
		st.lastID = sr.id
		st.received++
		if sr.retry > 0 {
			st.retry = sr.retry
		}
		switch name {
		case string(sandbox.StreamStdout), string(sandbox.StreamStderr):
			var d sandbox.Data
			if err := json.Unmarshal(data, &d); err != nil {
				return fmt.Errorf("decode %s event: %w", name, err)
			}
			st.pass(sandbox.Stream(name), d)
		case "run":
			if st.ev.run != nil {
				var a api.RunAccepted
				if err := json.Unmarshal(data, &a); err != nil {
					return fmt.Errorf("decode run event: %w", err)
				}
				st.ev.run(a.ID)
			}
		case "result":
			got = true
			if err := json.Unmarshal(data, st.ev.result); err != nil {
				return err
			}
			st.fillGap(prev)
			return nil
		case "error":
			var w api.Error
			_ = json.Unmarshal(data, &w)
			e := &APIError{Status: api.HTTPStatus(w.Code)}
			e.setError(w)
			if e.Message == "" {
				e.Message = "the server failed during the stream"
			}
			return e
		}
		if st.ev.other != nil {
			return st.ev.other(name, data)
		}
		return nil // events of later versions
	})
	switch {
	case got:
		return nil
	case err == nil:
		return &droppedError{fmt.Errorf("client: %s %s: the stream ended without a result", r.method, r.path)}
	}
	if _, ok := err.(*APIError); ok { // not wrapped: callers test it with errors.As
		return err
	}
	err = fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	if sr.failed { // the connection, not an event
		return &droppedError{err}
	}
	return err
}

// pass passes d, of stream s, on to the output function.
func (st *streamState) pass(s sandbox.Stream, d []byte) {
	if len(d) == 0 {
		return
	}
	st.passed[streamIndex(s)] += len(d)
	st.ev.output(s, d)
}

// fillGap passes on the output the result has that the events did not
// bring: after a resumption, when the result's id says output came
// between it and prev, the id of the event before it. Ids are the
// positions the server gives (1 + the output bytes so far).
func (st *streamState) fillGap(prev string) {
	res, ok := st.ev.result.(*api.RunResponse)
	if !ok || !st.resumed {
		return
	}
	before, err1 := strconv.ParseInt(prev, 10, 64)
	end, err2 := strconv.ParseInt(st.lastID, 10, 64)
	if err1 != nil || err2 != nil || end <= before+1 {
		return
	}
	for _, s := range []sandbox.Stream{sandbox.StreamStdout, sandbox.StreamStderr} {
		out := res.Stdout
		if s == sandbox.StreamStderr {
			out = res.Stderr
		}
		if n := st.passed[streamIndex(s)]; n < len(out) {
			st.pass(s, out[n:])
		}
	}
}

func streamIndex(s sandbox.Stream) int {
	if s == sandbox.StreamStderr {
		return 1
	}
	return 0
}

// sseReader reads Server-Sent Events, keeping the fields that outlive an
// event.
type sseReader struct {
	id     string        // the last event ID
	retry  time.Duration // the last retry:, 0 before one
	failed bool          // reading the body failed
}

// read reads events from body, calling fn with each event's name and
// data, until the end of body or fn's error.
func (sr *sseReader) read(body io.Reader, fn func(name string, data []byte) error) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxEventBytes)
	var name string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if name != "" || data != nil {
				if name == "" {
					name = "message"
				}
				if err := fn(name, data); err != nil {
					return err
				}
			}
			name, data = "", nil
		case field == "": // a comment: a heartbeat
		case field == "event":
			name = strings.TrimSpace(value)
		case field == "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		case field == "id" && !strings.ContainsRune(value, 0):
			sr.id = value
		case field == "retry":
			if ms, err := strconv.ParseUint(value, 10, 32); err == nil {
				sr.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := sc.Err(); err != nil {
		sr.failed = !errors.Is(err, bufio.ErrTooLong)
		return err
	}
	return nil
}
