package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// analystPrompt sets a model up as a data analyst working in a session.
const analystPrompt = `You are a careful data analyst with a Python session in an isolated sandbox (no network).
%s
Work in small steps with session_exec: load the data with pandas, look at its shape, columns, types
and a few rows before computing anything, and check each result before building on it. Variables
persist between cells. Save charts with matplotlib (plt.savefig('name.png')); they come back as
images. Read and write files with session_files. When you answer, give the numbers you computed
and say how you computed them; say so when the data cannot answer the question.%s`

// addPrompts adds the data-analyst prompt.
func (h *handlers) addPrompts(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{Name: "data_analyst", Title: "Data analyst over a session",
		Description: "Set the model up as a data analyst working in a Crucible Python session.",
		Arguments: []*mcp.PromptArgument{
			{Name: "session", Description: "the ID of an open session (session_create); omit to have the model open one in the datascience image"},
			{Name: "question", Description: "the question to answer about the data"},
		}}, dataAnalyst)
}

func dataAnalyst(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	args := req.Params.Arguments
	setup := "Open a session first with session_create, image datascience (pandas, numpy, matplotlib)."
	if id := args["session"]; id != "" {
		setup = fmt.Sprintf("Use the open session %q: its files are the data (list them with session_files).", id)
	}
	question := ""
	if q := args["question"]; q != "" {
		question = "\n\nThe question: " + q
	}
	return &mcp.GetPromptResult{Description: "A data analyst over a Crucible session",
		Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf(analystPrompt, setup, question)}}}}, nil
}
