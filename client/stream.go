package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxEventBytes bounds one event of a stream; the server's events are
// output chunks (64 KiB at most before encoding) and results.
const maxEventBytes = 256 << 20

// events says what to do with the events of a stream: output goes to
// output, the run's ID (the first event of a run, before it is queued) to
// run if set, and the result is decoded into result.
type events struct {
	output sandbox.OutputFunc
	run    func(id string)
	result any
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
func (c *Client) readStream(ctx context.Context, r request, ev events) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got := false
	err = readEvents(resp.Body, func(name string, data []byte) error {
		switch name {
		case string(sandbox.StreamStdout), string(sandbox.StreamStderr):
			var d sandbox.Data
			if err := json.Unmarshal(data, &d); err != nil {
				return fmt.Errorf("decode %s event: %w", name, err)
			}
			if len(d) > 0 {
				ev.output(sandbox.Stream(name), d)
			}
		case "run":
			if ev.run != nil {
				var a api.RunAccepted
				if err := json.Unmarshal(data, &a); err != nil {
					return fmt.Errorf("decode run event: %w", err)
				}
				ev.run(a.ID)
			}
		case "result":
			got = true
			return json.Unmarshal(data, ev.result)
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
		return nil // events of later versions
	})
	if err != nil {
		if _, ok := err.(*APIError); ok { // not wrapped: callers test it with errors.As
			return err
		}
		return fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	if !got {
		return fmt.Errorf("client: %s %s: the stream ended without a result", r.method, r.path)
	}
	return nil
}

// readEvents reads Server-Sent Events from body, calling fn with each
// event's name and data, until the end of body or fn's error.
func readEvents(body io.Reader, fn func(name string, data []byte) error) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxEventBytes)
	var name string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
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
		case strings.HasPrefix(line, ":"): // a comment: a heartbeat
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			d := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, d...)
		}
	}
	return sc.Err()
}
