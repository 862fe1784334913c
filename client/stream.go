package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxEventBytes bounds one event of a stream; the server's events are
// output chunks (64 KiB at most before encoding) and results.
const maxEventBytes = 256 << 20

// stream sends r with in as its JSON body and ?stream=1, passes the output
// events to onOutput and decodes the result event into out.
func (c *Client) stream(ctx context.Context, r request, in any, onOutput sandbox.OutputFunc, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("client: encode request: %w", err)
	}
	r.body, r.contentType = bytes.NewReader(b), "application/json"
	if r.query == nil {
		r.query = url.Values{}
	}
	r.query.Set("stream", "1")
	return c.readStream(ctx, r, onOutput, out)
}

// readStream sends r, whose answer is an event stream, passes its output
// events to onOutput and decodes its result event into out.
func (c *Client) readStream(ctx context.Context, r request, onOutput sandbox.OutputFunc, out any) error {
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
			onOutput(sandbox.Stream(name), d)
		case "result":
			got = true
			return json.Unmarshal(data, out)
		case "error":
			// The server failed once the stream had started (200 sent).
			var e struct {
				Code, Message, Field, Rule string
			}
			_ = json.Unmarshal(data, &e)
			return &APIError{Status: statusOfCode(e.Code), Code: e.Code, Message: e.Message, Field: e.Field, Rule: e.Rule}
		}
		return nil // "run" and events of later versions
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

// statusOfCode is the HTTP status the server answers code with, for an
// error that reached the client inside a stream.
func statusOfCode(code string) int {
	switch code {
	case "invalid_request":
		return http.StatusBadRequest
	case "not_found":
		return http.StatusNotFound
	case "session_closed":
		return http.StatusGone
	case "too_many_requests":
		return http.StatusTooManyRequests
	case "unavailable":
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
