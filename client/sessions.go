package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Session is a live interpreter on the server whose variables and files
// persist from one cell to the next. Create it with Client.NewSession and
// end it with Close; the server may also close it when idle, after which
// its calls fail with an *APIError of status 410 (code "session_closed").
type Session struct {
	c    *Client
	id   string
	path string // "/v1/sessions/{id}", escaped
}

// NewSession opens a session (POST /v1/sessions).
func (c *Client) NewSession(ctx context.Context, req sandbox.SessionRequest) (*Session, error) {
	var ans struct {
		ID string `json:"id"`
	}
	if err := c.call(ctx, request{method: "POST", path: "/v1/sessions"}, req, &ans); err != nil {
		return nil, err
	}
	if ans.ID == "" {
		return nil, fmt.Errorf("client: POST /v1/sessions: the answer has no session id")
	}
	return &Session{c: c, id: ans.ID, path: "/v1/sessions/" + url.PathEscape(ans.ID)}, nil
}

// ID returns the session's server-side ID.
func (s *Session) ID() string { return s.id }

// Exec runs a cell (POST /v1/sessions/{id}/exec). As with Client.Run, code
// that fails is a Result, not an error. Result.Value holds the repr of the
// cell's last expression. When cell.OnOutput is set, the cell is streamed
// as Client.Run streams a run.
func (s *Session) Exec(ctx context.Context, cell sandbox.Cell) (sandbox.Result, error) {
	var res sandbox.Result
	r := request{method: "POST", path: s.path + "/exec"}
	if cell.OnOutput != nil {
		return res, s.c.stream(ctx, r, cell, cell.OnOutput, &res)
	}
	err := s.c.call(ctx, r, cell, &res)
	return res, err
}

// WriteFile creates or replaces the file name, a path relative to the
// session's working directory such as "data/in.csv" (PUT
// /v1/sessions/{id}/files/{name}).
func (s *Session) WriteFile(ctx context.Context, name string, content []byte) error {
	return s.c.call(ctx, request{method: "PUT", path: s.filePath(name),
		body: bytes.NewReader(content), contentType: "application/octet-stream"}, nil, nil)
}

// ReadFile returns the content of the file name (GET
// /v1/sessions/{id}/files/{name}); IsNotFound reports a missing file.
func (s *Session) ReadFile(ctx context.Context, name string) ([]byte, error) {
	resp, err := s.c.send(ctx, request{method: "GET", path: s.filePath(name)})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: read file %q: %w", name, err)
	}
	return b, nil
}

// ListFiles lists the session's working directory, recursively (GET
// /v1/sessions/{id}/files).
func (s *Session) ListFiles(ctx context.Context) ([]sandbox.FileInfo, error) {
	var ans struct {
		Files []sandbox.FileInfo `json:"files"`
	}
	if err := s.c.call(ctx, request{method: "GET", path: s.path + "/files"}, nil, &ans); err != nil {
		return nil, err
	}
	return ans.Files, nil
}

// Close ends the session and destroys its sandbox (DELETE
// /v1/sessions/{id}).
func (s *Session) Close(ctx context.Context) error {
	return s.c.call(ctx, request{method: "DELETE", path: s.path}, nil, nil)
}

// filePath is the escaped API path of the session's file name.
func (s *Session) filePath(name string) string {
	return s.path + "/files/" + escapePath(name)
}
