package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAnalystPrompt: the data-analyst prompt names the session given, or
// tells the model to open one, and carries the question.
func TestAnalystPrompt(t *testing.T) {
	cs, _ := connect(t, newService(t))
	for _, tc := range []struct {
		name string
		args map[string]string
		want []string
	}{
		{"no session", map[string]string{}, []string{"session_create", "datascience"}},
		{"a session and a question", map[string]string{"session": "ses_1", "question": "which month sold most?"}, []string{`"ses_1"`, "which month sold most?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "data_analyst", Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Messages[0].Content.(*mcp.TextContent).Text
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("prompt lacks %q:\n%s", w, text)
				}
			}
		})
	}
}
