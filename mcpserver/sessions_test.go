package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSessionTools: a session keeps state between cells; its files can be
// written, listed and read; once closed it refuses cells; bad input names
// the field.
func TestSessionTools(t *testing.T) {
	cs, _ := connect(t, newService(t))
	var sess mcpserver.SessionOutput
	if res := call(t, cs, "session_create", map[string]any{"files": []map[string]any{{"name": "in.txt", "content": "seed"}}}, &sess); res.IsError || sess.ID == "" {
		t.Fatalf("session_create: %s %+v", errorText(res), sess)
	}
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string // in the structured content's JSON
		errorWith  string // an error result naming this
		failed     bool   // the cell failed: an error result with the whole run
	}{
		{"a cell sets x", "session_exec", map[string]any{"code": "x = 6*7"}, `"status":"ok"`, "", false},
		{"the next sees it", "session_exec", map[string]any{"code": "print(x)"}, `"stdout":"42\n"`, "", false},
		{"its value", "session_exec", map[string]any{"code": "x + 1"}, `"value":"43"`, "", false},
		{"an exception", "session_exec", map[string]any{"code": "x / 0"}, `"status":"error"`, "", true},
		{"a timeout", "session_exec", map[string]any{"code": "while True: pass", "timeout_ms": 300}, `"status":"timeout"`, "", true},
		{"write a file", "session_files", map[string]any{"action": "write", "name": "out.txt", "content": "hello"}, `"size":5`, "", false},
		{"list files", "session_files", map[string]any{"action": "list"}, `"name":"out.txt"`, "", false},
		{"read a seed file", "session_files", map[string]any{"action": "read", "name": "in.txt"}, `"content":"seed"`, "", false},
		{"a bad action", "session_files", map[string]any{"action": "delete"}, "", "action", false},
		{"close", "session_close", map[string]any{}, `"id":"` + sess.ID + `"`, "", false},
		{"exec after close", "session_exec", map[string]any{"code": "1"}, "", "closed", false},
		{"an unknown session", "session_exec", map[string]any{"session": "ses_nosuch", "code": "1"}, "", "ses_nosuch", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tc.args["session"]; !ok {
				tc.args["session"] = sess.ID
			}
			res := call(t, cs, tc.tool, tc.args, nil)
			if tc.errorWith != "" {
				if msg := errorText(res); !strings.Contains(msg, tc.errorWith) {
					t.Fatalf("error result %q (is error %v), want one naming %q", msg, res.IsError, tc.errorWith)
				}
				return
			}
			// A tool that ran code marks a failed run an error, with the
			// whole result still there.
			if res.IsError != tc.failed {
				t.Fatalf("isError %v, want %v: %s", res.IsError, tc.failed, jsonOf(t, res.StructuredContent))
			}
			if got := jsonOf(t, res.StructuredContent); !strings.Contains(got, tc.want) {
				t.Fatalf("structured content %s lacks %s", got, tc.want)
			}
		})
	}
}

// TestRunGet: run_get reads a run's record back; an unknown ID is an error
// naming it.
func TestRunGet(t *testing.T) {
	cs, _ := connect(t, newService(t))
	var run mcpserver.RunOutput
	call(t, cs, "run_code", map[string]any{"code": "print(6*7)"}, &run)
	for _, tc := range []struct {
		name, id, want, errorWith string
	}{
		{"a past run", run.ID, `"stdout":"42\n"`, ""},
		{"no such run", "run_nosuch", "", "run_nosuch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, "run_get", map[string]any{"id": tc.id}, nil)
			if tc.errorWith != "" {
				if msg := errorText(res); !strings.Contains(msg, tc.errorWith) {
					t.Fatalf("error result %q, want one naming %q", msg, tc.errorWith)
				}
				return
			}
			if got := jsonOf(t, res.StructuredContent); res.IsError || !strings.Contains(got, tc.want) {
				t.Fatalf("run_get: %s %s, want %s", errorText(res), got, tc.want)
			}
		})
	}
}

// TestSessionCellRecorded: a cell's result names its run record, which
// run_get reads back, and a file the cell wrote is a resource of that
// record.
func TestSessionCellRecorded(t *testing.T) {
	cs, _ := connect(t, newService(t))
	var sess mcpserver.SessionOutput
	call(t, cs, "session_create", map[string]any{}, &sess)
	var cell mcpserver.RunOutput
	call(t, cs, "session_exec", map[string]any{"session": sess.ID,
		"code": "open('cell.txt', 'w').write('from a cell')\nprint('wrote')"}, &cell)
	if cell.ID == "" || len(cell.Artifacts) != 1 || cell.Artifacts[0].URI == "" {
		t.Fatalf("session_exec: %+v, want a run ID and the file as an artifact with its URI", cell)
	}
	var rec mcpserver.RunOutput
	call(t, cs, "run_get", map[string]any{"id": cell.ID}, &rec)
	if rec.Stdout != "wrote\n" {
		t.Errorf("run_get %s: stdout %q", cell.ID, rec.Stdout)
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: cell.Artifacts[0].URI})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "from a cell" {
		t.Fatalf("read %s: %v %+v", cell.Artifacts[0].URI, err, res)
	}
}
