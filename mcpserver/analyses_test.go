package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/mcpserver"
	"github.com/crucible-sandbox/crucible/service"
)

// withScriptedModel gives the service a model scripted to send codes in
// turn and answer with answer: a local server speaking the OpenAI wire
// format (llmtest), since no model can run where the tests run.
func withScriptedModel(t *testing.T, answer string, codes ...string) func(*service.Config) {
	return func(c *service.Config) {
		srv := llmtest.OpenAI(t, llmtest.Script{Codes: codes, Answer: answer})
		model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1", APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		c.Agents.Model = model
	}
}

const insuranceCSV = "charges,region\n100,north\n300,south\n"

// TestAnalysisTools: analysis_create loads and profiles a CSV in the
// datascience image; analysis_ask has the analyst answer in that session
// with a scripted model: the answer's text, the code's output, the chart
// as a PNG image, progress notifications of the agent's steps; a
// follow-up sees the first question's variable.
func TestAnalysisTools(t *testing.T) {
	svc := newService(t, withScriptedModel(t, "the mean charge is 200",
		"m = df['charges'].mean()\nprint('mean', m)\nimport matplotlib.pyplot as plt\nplt.figure()\ndf['charges'].plot()\nplt.title('Charges over rows')",
		"print('twice', m * 2)"))
	testenv.Image(t, "datascience") // newService offers it when it is built
	cs, prog := connect(t, svc)

	var a mcpserver.AnalysisOutput
	res := call(t, cs, "analysis_create", map[string]any{"image": "datascience",
		"datasets": []any{map[string]any{"name": "insurance.csv", "content": insuranceCSV}}}, &a)
	if !strings.HasPrefix(a.ID, "ana_") || a.Session == "" || !strings.Contains(a.Profile, "charges") ||
		!strings.Contains(res.Content[0].(*mcp.TextContent).Text, "charges") {
		t.Fatalf("analysis_create: %+v", a)
	}

	params := &mcp.CallToolParams{Name: "analysis_ask", Arguments: map[string]any{"analysis": a.ID,
		"question": "What is the mean charge? Plot it.", "text_mode": true}}
	params.SetProgressToken("q1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("analysis_ask: %v %s", err, errorText(res))
	}
	var ans mcpserver.AnswerOutput
	decode(t, res, &ans)
	if ans.Status != "answered" || ans.Question != 1 || !strings.Contains(ans.Text, "200") ||
		!strings.Contains(ans.Output, "mean 200.0") || len(ans.Charts) != 1 || ans.Charts[0].Title != "Charges over rows" {
		t.Fatalf("answer %+v", ans)
	}
	var images int
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok && img.MIMEType == "image/png" && strings.HasPrefix(string(img.Data), "\x89PNG") {
			images++
		}
	}
	if images != 1 {
		t.Errorf("%d PNG images in the answer's content, want 1", images)
	}
	if msgs := strings.Join(prog.all(), "\n"); !strings.Contains(msgs, "code (attempt 1)") || !strings.Contains(msgs, "stdout: mean 200.0") {
		t.Errorf("progress %q lacks the code and its output", msgs)
	}

	var again mcpserver.AnswerOutput
	call(t, cs, "analysis_ask", map[string]any{"analysis": a.ID, "question": "And twice that?", "text_mode": true}, &again)
	if again.Question != 2 || !strings.Contains(again.Output, "twice 400.0") {
		t.Fatalf("follow-up %+v", again)
	}
}

// TestAnalysisToolsRefusals: bad input is a tool error naming the field;
// asking with no model configured says so.
func TestAnalysisToolsRefusals(t *testing.T) {
	cs, _ := connect(t, newService(t))
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"no datasets", "analysis_create", map[string]any{}, "datasets"},
		{"bad base64", "analysis_create", map[string]any{"datasets": []any{map[string]any{"name": "a.csv", "content_base64": "%%"}}}, "datasets[0].content_base64"},
		{"an unknown session", "analysis_create", map[string]any{"session": "ses_none", "files": []any{"a.csv"}}, "ses_none"},
		{"no model", "analysis_ask", map[string]any{"analysis": "ana_0000000000000000", "question": "why?"}, "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if msg := errorText(res); !res.IsError || !strings.Contains(msg, tc.want) {
				t.Fatalf("%s: error %v %q, want one naming %q", tc.tool, res.IsError, msg, tc.want)
			}
		})
	}
}
