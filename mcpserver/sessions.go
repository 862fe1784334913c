package mcpserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// SessionCreateInput is session_create's input.
type SessionCreateInput struct {
	Image  string       `json:"image,omitempty" jsonschema:"the image, such as datascience (pandas, numpy, matplotlib); omit for the server's default"`
	Files  []FileInput  `json:"files,omitempty" jsonschema:"files placed in the working directory at the start"`
	Limits *LimitsInput `json:"limits,omitempty" jsonschema:"limits for each cell; omit for the defaults"`
}

// SessionOutput describes an open session.
type SessionOutput struct {
	ID    string `json:"id" jsonschema:"the session's ID, for session_exec, session_files and session_close"`
	Image string `json:"image" jsonschema:"the image the session runs in"`
	Cells int    `json:"cells" jsonschema:"cells executed so far"`
}

// SessionExecInput is session_exec's input.
type SessionExecInput struct {
	Session   string `json:"session" jsonschema:"the session's ID from session_create"`
	Code      string `json:"code" jsonschema:"the Python cell to execute; variables, imports and files persist between cells"`
	TimeoutMS int64  `json:"timeout_ms,omitempty" jsonschema:"wall-time limit of this cell in milliseconds; omit for the session's"`
}

// SessionFilesInput is session_files' input.
type SessionFilesInput struct {
	Session       string `json:"session" jsonschema:"the session's ID from session_create"`
	Action        string `json:"action" jsonschema:"list, read or write"`
	Name          string `json:"name,omitempty" jsonschema:"for read and write: path relative to the working directory"`
	Content       string `json:"content,omitempty" jsonschema:"for write: the file's text (UTF-8)"`
	ContentBase64 string `json:"content_base64,omitempty" jsonschema:"for write: the file's bytes in standard base64, instead of content"`
}

// SessionFilesOutput is session_files' result.
type SessionFilesOutput struct {
	Files         []sandbox.FileInfo `json:"files,omitempty" jsonschema:"for list: the files in the working directory"`
	Content       string             `json:"content,omitempty" jsonschema:"for read: the file's text, when it is UTF-8"`
	ContentBase64 string             `json:"content_base64,omitempty" jsonschema:"for read: the file's bytes in base64, when they are not UTF-8"`
	Size          int                `json:"size,omitempty" jsonschema:"for read and write: the file's size in bytes"`
}

// SessionCloseInput is session_close's input.
type SessionCloseInput struct {
	Session string `json:"session" jsonschema:"the session's ID from session_create"`
}

// addSessionTools adds the session tools.
func (h *handlers) addSessionTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "session_create", Title: "Open a Python session",
		Description: "Open a persistent Python session (like a notebook kernel) in an isolated sandbox with no network. " +
			"Execute cells in it with session_exec; close it with session_close when done."}, h.sessionCreate)
	mcp.AddTool(s, &mcp.Tool{Name: "session_exec", Title: "Execute a cell in a session",
		Description: "Execute a Python cell in an open session: state persists between cells. Returns stdout, stderr, " +
			"the last expression's value, the structured error, and PNG files the cell wrote as images. " +
			"Output streams as progress notifications. The result is marked an error (isError) when the cell failed: " +
			"any status but ok, such as an exception, a timeout or the memory limit."}, h.sessionExec)
	mcp.AddTool(s, &mcp.Tool{Name: "session_files", Title: "List, read or write a session's files",
		Description: "List the files of a session's working directory (action list), read one (action read, name) " +
			"or write one (action write, name, content or content_base64)."}, h.sessionFiles)
	mcp.AddTool(s, &mcp.Tool{Name: "session_close", Title: "Close a session",
		Description: "Close a session and free its sandbox.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true}}, h.sessionClose)
}

func sessionOutput(i api.SessionInfo) SessionOutput {
	return SessionOutput{ID: i.ID, Image: i.Image, Cells: i.Cells}
}

func (h *handlers) sessionCreate(ctx context.Context, _ *mcp.CallToolRequest, in SessionCreateInput) (*mcp.CallToolResult, SessionOutput, error) {
	fs, err := files(in.Files)
	if err != nil {
		return nil, SessionOutput{}, err
	}
	ss, err := h.svc.OpenSession(ctx, h.tenant, sandbox.SessionRequest{Image: in.Image, Files: fs, Limits: in.Limits.sandbox()}, service.SessionOptions{})
	if err != nil {
		return nil, SessionOutput{}, err
	}
	return nil, sessionOutput(ss.Info()), nil
}

func (h *handlers) sessionExec(ctx context.Context, req *mcp.CallToolRequest, in SessionExecInput) (*mcp.CallToolResult, RunOutput, error) {
	ss, err := h.svc.Session(h.tenant, in.Session)
	if err != nil {
		return nil, RunOutput{}, err
	}
	p := newProgress(ctx, req)
	resp, err := ss.ExecRecorded(ctx, sandbox.Cell{Code: in.Code, TimeoutMS: in.TimeoutMS, OnOutput: p.onOutput()})
	p.stop()
	if err != nil {
		return nil, RunOutput{}, err
	}
	return &mcp.CallToolResult{Content: content(resp), IsError: programFailed(resp.Status)}, runOutput(resp), nil
}

func (h *handlers) sessionFiles(ctx context.Context, _ *mcp.CallToolRequest, in SessionFilesInput) (*mcp.CallToolResult, SessionFilesOutput, error) {
	ss, err := h.svc.Session(h.tenant, in.Session)
	if err != nil {
		return nil, SessionFilesOutput{}, err
	}
	switch in.Action {
	case "list":
		fs, err := ss.ListFiles(ctx)
		return nil, SessionFilesOutput{Files: fs}, err
	case "read":
		b, err := ss.ReadFile(ctx, in.Name)
		if err != nil {
			return nil, SessionFilesOutput{}, err
		}
		if utf8.Valid(b) {
			return nil, SessionFilesOutput{Content: string(b), Size: len(b)}, nil
		}
		return nil, SessionFilesOutput{ContentBase64: base64.StdEncoding.EncodeToString(b), Size: len(b)}, nil
	case "write":
		b, err := FileInput{Name: in.Name, Content: in.Content, ContentBase64: in.ContentBase64}.decode("content")
		if err != nil {
			return nil, SessionFilesOutput{}, err
		}
		if err := ss.WriteFile(ctx, in.Name, b); err != nil {
			return nil, SessionFilesOutput{}, err
		}
		return nil, SessionFilesOutput{Size: len(b)}, nil
	}
	return nil, SessionFilesOutput{}, &sandbox.InputError{Field: "action", Rule: fmt.Sprintf("must be list, read or write, got %q", in.Action)}
}

func (h *handlers) sessionClose(_ context.Context, _ *mcp.CallToolRequest, in SessionCloseInput) (*mcp.CallToolResult, SessionOutput, error) {
	ss, err := h.svc.Session(h.tenant, in.Session)
	if err != nil {
		return nil, SessionOutput{}, err
	}
	info := ss.Info()
	return nil, sessionOutput(info), ss.Close()
}
