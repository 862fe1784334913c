package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// RunCodeInput is run_code's input.
type RunCodeInput struct {
	Language string       `json:"language,omitempty" jsonschema:"python (default), javascript or bash"`
	Code     string       `json:"code" jsonschema:"the program's source text"`
	Files    []FileInput  `json:"files,omitempty" jsonschema:"files placed in the working directory before the program starts"`
	Stdin    string       `json:"stdin,omitempty" jsonschema:"text fed to standard input"`
	Limits   *LimitsInput `json:"limits,omitempty" jsonschema:"resource limits; omit for the defaults"`
	Image    string       `json:"image,omitempty" jsonschema:"the image to run in, such as datascience (pandas, numpy, matplotlib); omit for the server's default"`
	Policy   string       `json:"policy,omitempty" jsonschema:"static code policy: off, warn or block (nothing runs of code with findings); it can only tighten the server's"`
}

// RunGetInput is run_get's input.
type RunGetInput struct {
	ID string `json:"id" jsonschema:"the run's ID, as run_code or session_exec returned it"`
}

const runCodeDescription = `Run a program in a fresh, isolated Linux sandbox (no network) and return its stdout, stderr,
exit code and structured error. Files the program writes in its working directory come back as
artifacts: PNG images (matplotlib charts saved with savefig) as images, others as resource links.
Output streams as progress notifications while the program runs. The result is marked an error
(isError) when the program failed: any status but ok, such as a non-zero exit, a timeout or the
memory limit. Nothing persists between calls; use a session for that.`

// addRunTools adds run_code and run_get.
func (h *handlers) addRunTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "run_code", Title: "Run code in a sandbox", Description: runCodeDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false)}}, h.runCode)
	mcp.AddTool(s, &mcp.Tool{Name: "run_get", Title: "Read a past run",
		Description: "Read the record of a past run (from run_code or session_exec) by its ID: its status, output, error and artifacts.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, h.runGet)
}

func (h *handlers) runCode(ctx context.Context, req *mcp.CallToolRequest, in RunCodeInput) (*mcp.CallToolResult, RunOutput, error) {
	fs, err := files(in.Files)
	if err != nil {
		return nil, RunOutput{}, err
	}
	p := newProgress(ctx, req)
	r := sandbox.Request{Language: sandbox.Language(in.Language), Image: in.Image, Code: in.Code,
		Stdin: sandbox.Data(in.Stdin), Files: fs, Limits: in.Limits.sandbox(), OnOutput: p.onOutput()}
	if in.Policy != "" {
		r.Policy = &sandbox.Policy{Mode: sandbox.PolicyMode(in.Policy)}
	}
	resp, err := h.svc.Run(ctx, h.tenant, r, service.RunOptions{})
	p.stop()
	if err != nil {
		return nil, RunOutput{}, err
	}
	return &mcp.CallToolResult{Content: content(resp), IsError: programFailed(resp.Status)}, runOutput(resp), nil
}

func (h *handlers) runGet(ctx context.Context, _ *mcp.CallToolRequest, in RunGetInput) (*mcp.CallToolResult, RunOutput, error) {
	rec, err := h.svc.Get(ctx, h.tenant, in.ID)
	if err != nil {
		return nil, RunOutput{}, err
	}
	resp := recordResponse(rec)
	return &mcp.CallToolResult{Content: content(resp)}, runOutput(resp), nil
}
