package mcpserver_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/mcpserver"
	"github.com/crucible-sandbox/crucible/service"
)

// bugRepo is a tiny repository as a gzip'd tar: add subtracts (its test
// fails), mul is right (its test passes).
func bugRepo(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range [][2]string{
		{"calc.py", "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"},
		{"test_calc.py", "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sweService is a service with the datascience image (it needs root and
// the image) whose model fixes bugRepo: a scripted model
// (llmtest.OpenAICalls, a local server speaking the OpenAI wire format,
// as no model can run here) that views the code, replaces the bug and
// submits.
func sweService(t *testing.T) *service.Service {
	t.Helper()
	testenv.Image(t, "datascience")
	srv := llmtest.OpenAICalls(t, "sk-test",
		llmtest.Call{Name: "view", Args: map[string]any{"path": "calc.py"}},
		llmtest.Call{Name: "edit", Args: map[string]string{"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "return a + b"}},
		llmtest.Call{Name: "submit", Args: map[string]string{}})
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	return newService(t, func(c *service.Config) { c.Agents.Model = model })
}

// TestSWETool: the swe tool runs a swe run from an archive and answers
// its verdict (resolved), the diff and the tests before and after, as
// text and structured content, with progress notifications on the way;
// bad input is an error naming the tool's field.
func TestSWETool(t *testing.T) {
	cs, prog := connect(t, sweService(t))
	var out mcpserver.SWEOutput
	params := &mcp.CallToolParams{Name: "swe", Arguments: map[string]any{"task": "fix the failing test in test_calc.py",
		"archive": base64.StdEncoding.EncodeToString(bugRepo(t)), "image": "datascience", "tests": []string{"test_calc.py::test_add"}}}
	params.SetProgressToken("swe1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	decode(t, res, &out)
	if res.IsError || out.Status != "resolved" || !strings.Contains(out.Diff, "+    return a + b") || !out.Submitted ||
		out.Before == nil || out.Before.Failed != 1 || !slices.Equal(out.Before.FailedIDs, []string{"test_calc.py::test_add"}) ||
		out.After == nil || out.After.Failed != 0 || out.After.Passed != 2 || !strings.HasPrefix(out.Run, "agt_") {
		t.Fatalf("swe: error %v, %+v", res.IsError, out)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	for _, want := range []string{"status: resolved", "tests before: 1 passed, 1 failed", "tests after (fresh sandbox, diff applied): 2 passed, 0 failed", "fail to pass: test_calc.py::test_add", "+    return a + b"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	// Progress notifications are sent without waiting: the last may come
	// after the answer.
	deadline := time.Now().Add(10 * time.Second)
	for msgs := ""; ; time.Sleep(50 * time.Millisecond) {
		msgs = strings.Join(prog.all(), "\n")
		if strings.Contains(msgs, "setup (step 0)") && strings.Contains(msgs, "verify") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("progress %q: want the setup and verify steps", msgs)
			break
		}
	}

	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"bad base64", map[string]any{"task": "t", "archive": "%%%"}, "archive"},
		{"not an archive", map[string]any{"task": "t", "archive": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 2000))}, "archive"},
		{"a bad format", map[string]any{"task": "t", "archive": base64.StdEncoding.EncodeToString(bugRepo(t)), "format": "zip"}, "format"},
		{"an absolute test", map[string]any{"task": "t", "archive": base64.StdEncoding.EncodeToString(bugRepo(t)), "tests": []string{"/etc/passwd"}}, "tests[0]"},
		{"no task", map[string]any{"task": "", "archive": base64.StdEncoding.EncodeToString(bugRepo(t))}, "task"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "swe", Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if msg := errorText(res); !res.IsError || !strings.Contains(msg, tc.want) {
				t.Fatalf("error %v %q, want one naming %q", res.IsError, msg, tc.want)
			}
		})
	}
}

// TestSWEToolTypeScriptClient drives the swe tool over streamable HTTP
// with the official TypeScript SDK's client (tools/mcp-client/swe.mjs):
// it lists the tool with its inputs (an archive, never a path), gets a
// resolved run with its diff and tests, and an error naming the archive
// for bad base64.
func TestSWEToolTypeScriptClient(t *testing.T) {
	clientDir := testenv.NPMClients(t)
	svc := sweService(t)
	srv := mcpserver.New(svc, "t", "test")
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "swe.mjs", hs.URL)
	cmd.Dir = clientDir
	cmd.Env = append(os.Environ(), "MCP_SWE_ARCHIVE="+base64.StdEncoding.EncodeToString(bugRepo(t)),
		"MCP_SWE_TESTS=test_calc.py::test_add", "MCP_SWE_IMAGE=datascience")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr.String())
	}
	steps := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	for sc.Scan() {
		var step map[string]any
		if err := json.Unmarshal(sc.Bytes(), &step); err != nil {
			t.Fatalf("client line %q: %v", sc.Text(), err)
		}
		steps[step["step"].(string)] = step
	}
	tools := steps["tools"]
	if names, _ := tools["names"].([]any); !slices.Contains(names, any("swe")) {
		t.Errorf("tools %v lack swe", tools["names"])
	}
	if inputs, _ := tools["inputs"].([]any); !slices.Contains(inputs, any("archive")) || slices.Contains(inputs, any("path")) {
		t.Errorf("swe's inputs %v: want an archive and no path", inputs)
	}
	run := steps["swe"]
	if run["status"] != "resolved" || run["isError"] != false || !strings.Contains(run["diff"].(string), "+    return a + b") ||
		!strings.Contains(run["text"].(string), "status: resolved") {
		t.Errorf("swe: %v", run)
	}
	if bad := steps["bad"]; bad["isError"] != true || !strings.Contains(bad["text"].(string), "archive") {
		t.Errorf("bad base64: %v", bad)
	}
}
