package e2bapi

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// The code interpreter answers /execute with newline-delimited JSON, one
// message a line, as E2B's does: stdout and stderr as the cell writes
// them, then its results, its error, its execution count, and always a
// last end_of_execution. These are our own definitions of those messages,
// written from what the SDKs read.

// outputMsg is a chunk of the cell's stdout or stderr.
type outputMsg struct {
	Type      string `json:"type"` // "stdout" or "stderr"
	Text      string `json:"text"`
	Timestamp string `json:"timestamp"`
}

// resultMsg is one result: the last expression's value (IsMainResult) or
// something the cell showed (display(), a figure). Each field is one
// representation; text is the plain one.
type resultMsg struct {
	Type         string          `json:"type"` // "result"
	Text         string          `json:"text,omitempty"`
	HTML         string          `json:"html,omitempty"`
	Markdown     string          `json:"markdown,omitempty"`
	SVG          string          `json:"svg,omitempty"`
	PNG          string          `json:"png,omitempty"` // base64
	JSON         json.RawMessage `json:"json,omitempty"`
	IsMainResult bool            `json:"is_main_result"`
}

// errorMsg is the cell's error: the exception's class, its message and
// the traceback as the interpreter printed it.
type errorMsg struct {
	Type      string `json:"type"` // "error"
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// countMsg is the context's execution count after the cell.
type countMsg struct {
	Type           string `json:"type"` // "number_of_executions"
	ExecutionCount int    `json:"execution_count"`
}

// endMsg always ends the answer.
var endMsg = struct {
	Type string `json:"type"`
}{"end_of_execution"}

// resultMsgs returns the results of a cell, in the order a notebook shows
// them: what it displayed, its last expression's value, then its images.
// An image is a PNG artifact the cell left: the figures it left open
// (figure-1.png, ...) and the PNG files it wrote (a chart it saved with
// savefig, which a notebook would also show, the figure being open).
func resultMsgs(res sandbox.Result) []resultMsg {
	var out []resultMsg
	for _, d := range res.Displays {
		m := resultMsg{Type: "result", Text: d.Text}
		if d.Omitted == "" {
			switch d.MIME {
			case "text/html":
				m.HTML = string(d.Data)
			case "text/markdown":
				m.Markdown = string(d.Data)
			case "image/svg+xml":
				m.SVG = string(d.Data)
			case "image/png":
				m.PNG = base64.StdEncoding.EncodeToString(d.Data)
			case "application/json":
				if json.Valid(d.Data) {
					m.JSON = json.RawMessage(d.Data)
				}
			}
		}
		out = append(out, m)
	}
	if res.Value != "" || res.ValueHTML != "" {
		out = append(out, resultMsg{Type: "result", Text: res.Value, HTML: res.ValueHTML, IsMainResult: true})
	}
	for _, a := range res.Artifacts {
		if a.MIME == "image/png" && !a.ContentOmitted && len(a.Content) > 0 {
			out = append(out, resultMsg{Type: "result", PNG: base64.StdEncoding.EncodeToString(a.Content)})
		}
	}
	return out
}

// errorNames name the error of a cell that ended on a limit, or without
// the interpreter's own error.
var errorNames = map[sandbox.Status]string{
	sandbox.StatusError:       "Error",
	sandbox.StatusTimeout:     "TimeoutError",
	sandbox.StatusCPULimit:    "CPUTimeLimitError",
	sandbox.StatusMemoryLimit: "MemoryError",
	sandbox.StatusOutputLimit: "OutputLimitError",
	sandbox.StatusKilled:      "KilledError",
	sandbox.StatusBlocked:     "PolicyError",
	sandbox.StatusInternal:    "InternalError",
}

// errorOf returns the error message of a cell, or nil for one that
// succeeded. An exception the interpreter raised keeps its class and
// message; a cell a limit stopped is named by the limit (TimeoutError for
// the wall-time limit), the reason as its value; a hint the platform
// wrote (a module the image lacks) follows the traceback.
func errorOf(res sandbox.Result) *errorMsg {
	if res.Status == sandbox.StatusOK {
		return nil
	}
	m := &errorMsg{Type: "error", Name: errorNames[res.Status], Value: res.Reason}
	if m.Name == "" {
		m.Name = "Error"
	}
	if e := res.Error; e != nil {
		m.Traceback = e.Traceback
		if e.Hint != "" {
			m.Traceback = strings.TrimRight(m.Traceback, "\n") + "\n\nHint: " + e.Hint
		}
		if res.Status == sandbox.StatusError {
			m.Name, m.Value = e.Type, e.Message
		}
	}
	if res.Status == sandbox.StatusBlocked {
		for _, f := range res.Findings {
			m.Value += "\n" + f.Message
		}
	}
	if m.Value == "" {
		m.Value = "the cell ended with status " + string(res.Status)
	}
	return m
}
