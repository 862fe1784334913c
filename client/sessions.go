package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Session is a live interpreter on the server whose variables and files
// persist from one cell to the next; it implements sandbox.Session. Create
// it with Client.NewSession, or get a handle on an existing one with
// Client.AttachSession, and end it with Close. The server may also close it
// when idle; its calls then fail with an *APIError of status 410 (code
// "session_closed"), for which errors.Is(err, sandbox.ErrSessionClosed)
// holds. A Session is safe for concurrent use; the server runs its cells
// one at a time.
type Session struct {
	c    *Client
	id   string
	path string // "/v1/sessions/{id}", escaped
}

// NewSession opens a session (POST /v1/sessions) and returns it, a
// *Session. Every field of req is optional: the zero SessionRequest opens
// a Python session in the server's default image with the default limits,
// and Language may be an alias ("py"). A tenant or server already holding
// as many sessions as it allows answers 429: the error then matches both
// sandbox.ErrTooManySessions (errors.Is) and an *APIError with its
// RetryAfter (errors.As).
func (c *Client) NewSession(ctx context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	var ans api.SessionInfo
	if err := c.call(ctx, request{method: "POST", path: "/v1/sessions"}, req, &ans); err != nil {
		if IsTooManyRequests(err) {
			return nil, fmt.Errorf("%w: %w", sandbox.ErrTooManySessions, err)
		}
		return nil, err
	}
	if ans.ID == "" {
		return nil, fmt.Errorf("client: POST /v1/sessions: the answer has no session id")
	}
	return c.AttachSession(ans.ID), nil
}

// AttachSession returns a handle on the server's session id, opened
// earlier by this or another client of the same tenant, such as by a
// process that has since restarted (ListSessions finds the ids). It sends
// no request: whether the session exists is known at its first use, which
// fails with IsNotFound for an id the server does not know (or that is
// another tenant's), and with sandbox.ErrSessionClosed for a session that
// was closed.
func (c *Client) AttachSession(id string) *Session {
	return &Session{c: c, id: id, path: "/v1/sessions/" + url.PathEscape(id)}
}

// ListSessions describes the tenant's open sessions, newest first (GET
// /v1/sessions): their images, limits, cells run and when they were last
// used.
func (c *Client) ListSessions(ctx context.Context) ([]api.SessionInfo, error) {
	var ans api.SessionList
	if err := c.call(ctx, request{method: "GET", path: "/v1/sessions"}, nil, &ans); err != nil {
		return nil, err
	}
	return ans.Sessions, nil
}

// GetSession describes the tenant's open session id (GET
// /v1/sessions/{id}). An id the server does not know, or another
// tenant's, fails with IsNotFound; a closed session with an error
// matching sandbox.ErrSessionClosed.
func (c *Client) GetSession(ctx context.Context, id string) (*api.SessionInfo, error) {
	var ans api.SessionInfo
	if err := c.call(ctx, request{method: "GET", path: "/v1/sessions/" + url.PathEscape(id)}, nil, &ans); err != nil {
		return nil, err
	}
	return &ans, nil
}

// Info describes the session, as GetSession does.
func (s *Session) Info(ctx context.Context) (*api.SessionInfo, error) {
	return s.c.GetSession(ctx, s.id)
}

// ID returns the session's server-side ID.
func (s *Session) ID() string { return s.id }

// Exec runs a cell (POST /v1/sessions/{id}/exec). As with Client.Run, code
// that fails is a Result, not an error. Result.Value holds the repr of the
// cell's last expression. When cell.OnOutput is set, the cell is streamed
// as Client.CreateRun streams a run. A Result with StatusInternal comes
// with a *sandbox.PlatformError.
//
// Cancelling ctx closes the request; the server then interrupts the cell
// and keeps the session, as a local session does, and Exec returns a
// Result with StatusKilled and a nil error at once. The session's next
// cell waits on the server until the interrupted one has ended.
func (s *Session) Exec(ctx context.Context, cell sandbox.Cell) (sandbox.Result, error) {
	var res sandbox.Result
	r := request{method: "POST", path: s.path + "/exec"}
	var err error
	if cell.OnOutput != nil {
		err = s.c.stream(ctx, r, cell, events{output: cell.OnOutput, result: &res})
	} else {
		err = s.c.call(ctx, r, cell, &res)
	}
	switch {
	case err == nil:
		return res, internalError("cell of session "+s.id, res)
	case ctx.Err() != nil:
		killed := failedResult(sandbox.Request{Language: sandbox.Python, Code: cell.Code})
		killed.Status, killed.Reason = sandbox.StatusKilled, "cell cancelled: "+ctx.Err().Error()
		killed.Limits = sandbox.Limits{} // the session's are not known here
		return killed, nil
	}
	return sandbox.Result{}, err
}

// WriteFile creates or replaces the file name, a path relative to the
// session's working directory such as "data/in.csv" (PUT
// /v1/sessions/{id}/files/{name}). A read-only input file
// (sandbox.File.ReadOnly), or a file in a directory holding one, is
// refused: sandbox.IsInputError holds for the error.
func (s *Session) WriteFile(ctx context.Context, name string, content []byte) error {
	return s.c.call(ctx, request{method: "PUT", path: s.filePath(name),
		body: bytes.NewReader(content), contentType: "application/octet-stream"}, nil, nil)
}

// ReadFile returns the content of the file name (GET
// /v1/sessions/{id}/files/{name}). A missing file's error matches both
// fs.ErrNotExist (errors.Is), as a local session's does, and IsNotFound;
// so does that of a session the server does not know.
func (s *Session) ReadFile(ctx context.Context, name string) ([]byte, error) {
	resp, err := s.c.send(ctx, request{method: "GET", path: s.filePath(name)})
	if IsNotFound(err) {
		return nil, fmt.Errorf("client: read file %q: %w (%w)", name, fs.ErrNotExist, err)
	}
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
	var ans api.FileList
	if err := s.c.call(ctx, request{method: "GET", path: s.path + "/files"}, nil, &ans); err != nil {
		return nil, err
	}
	return ans.Files, nil
}

// closeTimeout bounds Close.
const closeTimeout = 30 * time.Second

// Close ends the session and destroys its sandbox (DELETE
// /v1/sessions/{id}), giving the server 30 seconds; CloseContext takes a
// context instead. Closing a session that is already closed, by this
// client, another, or the server when it was idle, fails with an error
// matching sandbox.ErrSessionClosed.
func (s *Session) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return s.CloseContext(ctx)
}

// CloseContext is Close with a context.
func (s *Session) CloseContext(ctx context.Context) error {
	return s.c.call(ctx, request{method: "DELETE", path: s.path}, nil, nil)
}

// filePath is the escaped API path of the session's file name.
func (s *Session) filePath(name string) string {
	return s.path + "/files/" + escapePath(name)
}
