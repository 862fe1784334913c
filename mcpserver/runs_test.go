package mcpserver_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/mcpserver"
	"github.com/crucible-sandbox/crucible/store"
)

// TestToolsListed: every tool is listed with an input and an output schema
// and a description.
func TestToolsListed(t *testing.T) {
	cs, _ := connect(t, newService(t))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: description %q, input schema %v, output schema %v", tool.Name, tool.Description, tool.InputSchema, tool.OutputSchema)
		}
	}
	slices.Sort(names)
	want := []string{"analysis_ask", "analysis_create", "run_code", "run_get", "session_close", "session_create", "session_exec", "session_files", "swe"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
}

// TestRunCode: run_code's results, as text and structured content, for
// programs that succeed and fail (marked isError, with the whole result),
// and its input errors naming the field.
func TestRunCode(t *testing.T) {
	svc := newService(t)
	cs, _ := connect(t, svc)
	for _, tc := range []struct {
		name     string
		args     map[string]any
		status   string
		stdout   string
		errType  string // the structured error's type
		inputErr string // an error result's text holds this
	}{
		{"print", map[string]any{"code": "print(6*7)"}, "ok", "42\n", "", ""},
		{"stdin and a file", map[string]any{"code": "print(input(), open('a.txt').read())", "stdin": "hi\n",
			"files": []map[string]any{{"name": "a.txt", "content_base64": "Ym9keQ=="}}}, "ok", "hi body\n", "", ""},
		{"javascript", map[string]any{"language": "javascript", "code": "console.log(6*7)"}, "ok", "42\n", "", ""},
		{"an exception", map[string]any{"code": "1/0"}, "error", "", "ZeroDivisionError", ""},
		{"a non-zero exit", map[string]any{"language": "bash", "code": "echo partial; exit 3"}, "error", "partial\n", "", ""},
		{"a timeout", map[string]any{"code": "while True: pass", "limits": map[string]any{"wall_time_ms": 500, "cpu_time_ms": 500}}, "timeout", "", "", ""},
		{"the memory limit", map[string]any{"code": "x = bytearray(512 << 20)", "limits": map[string]any{"memory_bytes": 64 << 20}}, "memory_limit", "", "", ""},
		{"bad base64", map[string]any{"code": "1", "files": []map[string]any{{"name": "a", "content_base64": "!!"}}}, "", "", "", "files[0].content_base64"},
		{"both contents", map[string]any{"code": "1", "files": []map[string]any{{"name": "a", "content": "x", "content_base64": "eA=="}}}, "", "", "", "files[0]"},
		{"an unknown image", map[string]any{"code": "1", "image": "nosuch"}, "", "", "", "image"},
		{"an unknown language", map[string]any{"code": "1", "language": "cobol"}, "", "", "", "language"},
		{"blocked by the code policy", map[string]any{"code": "print('ran')\nimport socket", "policy": "block"}, "blocked", "", "", ""},
		{"an unknown policy", map[string]any{"code": "1", "policy": "strictest"}, "", "", "", "policy.mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out mcpserver.RunOutput
			res := call(t, cs, "run_code", tc.args, &out)
			if tc.inputErr != "" {
				if msg := errorText(res); !strings.Contains(msg, tc.inputErr) {
					t.Fatalf("error result %q (is error %v), want one naming %q", msg, res.IsError, tc.inputErr)
				}
				return
			}
			if failed := tc.status != "ok"; res.IsError != failed {
				t.Fatalf("status %s: isError %v, want %v", out.Status, res.IsError, failed)
			}
			if out.Status != tc.status || out.Stdout != tc.stdout || out.ID == "" {
				t.Fatalf("status %q stdout %q id %q, want %q %q and an ID", out.Status, out.Stdout, out.ID, tc.status, tc.stdout)
			}
			if tc.errType != "" && (out.Error == nil || out.Error.Type != tc.errType) {
				t.Fatalf("error %+v, want type %s", out.Error, tc.errType)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !strings.Contains(text, "status: "+tc.status) || !strings.Contains(text, tc.stdout) || !strings.Contains(text, tc.errType) {
				t.Fatalf("text content %q lacks the status, stdout or error", text)
			}
		})
	}
}

// TestRunCodeArtifacts: a PNG the program writes comes back as image
// content, another file as a resource link to crucible://runs/{id}/...
func TestRunCodeArtifacts(t *testing.T) {
	cs, _ := connect(t, newService(t))
	png := "import base64\nopen('dot.png','wb').write(base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='))\nopen('out.csv','w').write('a,b\\n1,2\\n')"
	var out mcpserver.RunOutput
	res := call(t, cs, "run_code", map[string]any{"code": png}, &out)
	if res.IsError || out.Status != "ok" {
		t.Fatalf("result %+v: %s", out, errorText(res))
	}
	var image *mcp.ImageContent
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			image = c
		case *mcp.ResourceLink:
			link = c
		}
	}
	if image == nil || image.MIMEType != "image/png" || !strings.HasPrefix(string(image.Data), "\x89PNG") {
		t.Fatalf("no PNG image content in %+v", res.Content)
	}
	if want := "crucible://runs/" + out.ID + "/artifacts/out.csv"; link == nil || link.URI != want || link.Name != "out.csv" {
		t.Fatalf("resource link %+v, want %s", link, want)
	}
}

// TestRunCodeChart: a matplotlib chart in the datascience image comes back
// as image content.
func TestRunCodeChart(t *testing.T) {
	svc := newService(t)
	testenv.Image(t, "datascience") // newService offers it when it is built
	cs, _ := connect(t, svc)
	code := "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1,2,3],[1,4,9])\nplt.savefig('chart.png')"
	var out mcpserver.RunOutput
	res := call(t, cs, "run_code", map[string]any{"code": code, "image": "datascience",
		"limits": map[string]any{"wall_time_ms": 30000, "cpu_time_ms": 30000}}, &out)
	if res.IsError || out.Status != "ok" {
		t.Fatalf("result %+v: %s", out, errorText(res))
	}
	if !slices.ContainsFunc(res.Content, func(c mcp.Content) bool {
		i, ok := c.(*mcp.ImageContent)
		return ok && i.MIMEType == "image/png" && strings.HasPrefix(string(i.Data), "\x89PNG")
	}) {
		t.Fatalf("no chart image in %+v", res.Content)
	}
}

// TestRunCodeProgress: output of both streams arrives as progress
// notifications, before the result. (That it arrives while the program
// runs, TestRunCodeCancel shows: its program never ends by itself.)
func TestRunCodeProgress(t *testing.T) {
	cs, prog := connect(t, newService(t))
	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash",
		"code": "echo first; read line; echo second $line >&2", "stdin": "x\n"}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %s", err, errorText(res))
	}
	msgs := strings.Join(prog.all(), "")
	if !strings.Contains(msgs, "stdout: first") || !strings.Contains(msgs, "stderr: second x") {
		t.Fatalf("progress messages %q lack the output", msgs)
	}
}

// TestRunCodeCancel: cancelling the call kills the run: its record ends
// killed and no process of it is left on the host.
func TestRunCodeCancel(t *testing.T) {
	svc := newService(t)
	cs, prog := connect(t, svc)
	ctx, cancel := context.WithCancel(context.Background())
	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash",
		"code": "echo started; exec -a mcpcancelmarker sleep 600", "limits": map[string]any{"wall_time_ms": 600000, "cpu_time_ms": 600000}}}
	params.SetProgressToken("tok")
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	for msg := range prog.seen {
		if strings.Contains(msg, "started") {
			break
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("call after cancel: %v, want context.Canceled", err)
	}
	// Wait for the record to settle; the bound only guards a hang.
	deadline := time.Now().Add(time.Minute)
	for {
		runs, _, err := svc.List(context.Background(), "t", store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 1 && runs[0].Status != api.StatusQueued && runs[0].Status != api.StatusRunning {
			if runs[0].Status != "killed" {
				t.Fatalf("record status %q (%s), want killed", runs[0].Status, runs[0].Reason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run's record never settled: %+v", runs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pids := processesNamed("mcpcancelmarker"); len(pids) > 0 {
		t.Fatalf("processes left running after cancel: %v", pids)
	}
}

// processesNamed returns the pids whose command line starts with name.
func processesNamed(name string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.HasPrefix(string(b), name+"\x00") {
			out = append(out, e.Name())
		}
	}
	return out
}
