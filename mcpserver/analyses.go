package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/service"
)

// AnalysisCreateInput is analysis_create's input: datasets given whole, or
// named among the files of an open session.
type AnalysisCreateInput struct {
	Datasets []FileInput  `json:"datasets,omitempty" jsonschema:"the data files (CSV or TSV, Excel, JSON or JSON Lines), each loaded into a pandas DataFrame named after the file's stem; or give session and files instead"`
	Session  string       `json:"session,omitempty" jsonschema:"instead of datasets: an open session whose files are the datasets"`
	Files    []string     `json:"files,omitempty" jsonschema:"with session: paths in its working directory"`
	Image    string       `json:"image,omitempty" jsonschema:"the image to analyse in; it needs pandas (such as datascience); omit for the server's default"`
	Limits   *LimitsInput `json:"limits,omitempty" jsonschema:"limits of each program; omit for the analyst's defaults"`
}

// AnalysisOutput describes a new analysis.
type AnalysisOutput struct {
	ID       string   `json:"id" jsonschema:"the analysis's ID, for analysis_ask"`
	Session  string   `json:"session" jsonschema:"the session holding the DataFrames: session_exec runs your own cells on them, session_files reads files the answers wrote, session_close ends the analysis"`
	Image    string   `json:"image" jsonschema:"the image it runs in"`
	Datasets []string `json:"datasets" jsonschema:"the datasets' names"`
	Profile  string   `json:"profile" jsonschema:"the datasets' profile: per DataFrame its shape, columns with dtypes, missing and distinct counts, statistics, top values, sample rows and warnings"`
}

// AnalysisAskInput is analysis_ask's input.
type AnalysisAskInput struct {
	Analysis   string `json:"analysis" jsonschema:"the analysis's ID from analysis_create"`
	Question   string `json:"question" jsonschema:"the question about the data, in plain language; a format it asks for (such as @mean_fare[value]) is kept exactly in the answer"`
	MaxRetries *int   `json:"max_retries,omitempty" jsonschema:"how many failed attempts may follow the first; omit for the server's default"`
	TextMode   bool   `json:"text_mode,omitempty" jsonschema:"have the analyst's model write code in fenced blocks instead of tool calls (for models without tool calling)"`
}

// AnswerOutput is the analyst's answer to a question.
type AnswerOutput struct {
	Analysis string                 `json:"analysis" jsonschema:"the analysis's ID"`
	Question int                    `json:"question" jsonschema:"the question's number in the analysis, from 1"`
	Run      string                 `json:"run" jsonschema:"the agent run that answered it"`
	Status   string                 `json:"status" jsonschema:"answered, unverified (the verifier gave no verdict), or how the run ended without an answer (failed, budget_exhausted, refused, cancelled...)"`
	Reason   string                 `json:"reason,omitempty" jsonschema:"why there is no answer, when there is none"`
	Text     string                 `json:"text,omitempty" jsonschema:"the answer in words"`
	Code     string                 `json:"code,omitempty" jsonschema:"the Python code whose run produced the answer"`
	Output   string                 `json:"output,omitempty" jsonschema:"that code's standard output"`
	Tables   []TableOutput          `json:"tables,omitempty" jsonschema:"the DataFrames the code showed, their first rows"`
	Charts   []ChartOutput          `json:"charts,omitempty" jsonschema:"the charts the code drew (returned as PNG images too)"`
	Files    []string               `json:"files,omitempty" jsonschema:"files the code wrote in the session's working directory; read them with session_files"`
	Cleaning []service.CleanSummary `json:"cleaning,omitempty" jsonschema:"what crucible_clean changed, when the code cleaned a dataset"`
}

// TableOutput is a DataFrame an answer showed.
type TableOutput struct {
	Name         string   `json:"name,omitempty" jsonschema:"the name the code gave it"`
	Columns      []string `json:"columns" jsonschema:"column labels (a named index first)"`
	Rows         [][]any  `json:"rows" jsonschema:"the first rows"`
	TotalRows    int      `json:"total_rows" jsonschema:"rows in the whole DataFrame"`
	TotalColumns int      `json:"total_columns" jsonschema:"columns in the whole DataFrame"`
}

// ChartOutput is a chart an answer drew.
type ChartOutput struct {
	Name  string `json:"name" jsonschema:"the chart's file name"`
	Title string `json:"title,omitempty" jsonschema:"its title"`
}

const analysisCreateDescription = `Start a data analysis: load data files (CSV, TSV, Excel, JSON, JSON Lines) into pandas
DataFrames in a persistent, isolated Python session (no network) and profile them. Returns the
profile (shape, dtypes, missing values, statistics, samples, warnings) and the analysis's ID: ask
questions about the data with analysis_ask.`

const analysisAskDescription = `Ask a question about an analysis's data in plain language. Crucible's analyst agent writes
pandas code, runs it in the analysis's session (DataFrames and variables of earlier questions are
there), checks the result and answers: the answer's text, the code and its output, tables, and
charts as PNG images. Follow-up questions see the conversation so far. Progress notifications say
what the agent does. Needs a model configured on the server.`

// addAnalysisTools adds analysis_create and analysis_ask.
func (h *handlers) addAnalysisTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "analysis_create", Title: "Start a data analysis", Description: analysisCreateDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false)}}, h.analysisCreate)
	mcp.AddTool(s, &mcp.Tool{Name: "analysis_ask", Title: "Ask a question about the data", Description: analysisAskDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false)}}, h.analysisAsk)
}

func (h *handlers) analysisCreate(ctx context.Context, _ *mcp.CallToolRequest, in AnalysisCreateInput) (*mcp.CallToolResult, AnalysisOutput, error) {
	spec := service.AnalysisSpec{SessionID: in.Session, Files: in.Files, Image: in.Image, Limits: in.Limits.sandbox()}
	for i, f := range in.Datasets {
		b, err := f.decode(fmt.Sprintf("datasets[%d]", i))
		if err != nil {
			return nil, AnalysisOutput{}, err
		}
		spec.Datasets = append(spec.Datasets, service.Dataset{Name: f.Name, Content: b})
	}
	a, err := h.svc.CreateAnalysis(ctx, h.tenant, spec, nil)
	if err != nil {
		return nil, AnalysisOutput{}, err
	}
	out := AnalysisOutput{ID: a.ID, Session: a.SessionID, Image: a.Image, Datasets: a.Datasets, Profile: a.ProfileText}
	head := fmt.Sprintf("analysis: %s (session %s)\n\n", a.ID, a.SessionID)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: head + a.ProfileText}}}, out, nil
}

func (h *handlers) analysisAsk(ctx context.Context, req *mcp.CallToolRequest, in AnalysisAskInput) (*mcp.CallToolResult, AnswerOutput, error) {
	p := newProgress(ctx, req)
	var q *api.AnalysisQuestion // from the answer event: the ended run and the answer
	err := h.svc.StreamAnalysisQuestion(ctx, h.tenant, in.Analysis, api.QuestionRequest{Question: in.Question, MaxRetries: in.MaxRetries, TextMode: in.TextMode},
		func(e service.Event) bool {
			if e.Kind == service.EventAnswer && e.Agent != nil {
				q = e.Agent.Question
			}
			p.send(agentProgress(e))
			return true
		})
	p.stop()
	if err != nil {
		return nil, AnswerOutput{}, err
	}
	if q == nil { // cancelled before it ended: the call's context says so
		if ctx.Err() != nil {
			return nil, AnswerOutput{}, ctx.Err()
		}
		return nil, AnswerOutput{}, fmt.Errorf("the question about analysis %s ended without an answer event", in.Analysis)
	}
	out := AnswerOutput{Analysis: in.Analysis, Question: q.N, Run: q.Run.ID, Status: string(q.Run.Status), Reason: q.Run.Reason}
	var ans service.AnalysisAnswer
	if len(q.Answer) > 0 {
		if err := json.Unmarshal(q.Answer, &ans); err != nil {
			return nil, AnswerOutput{}, fmt.Errorf("read the answer of question %d: %w", q.N, err)
		}
		out.Text, out.Code, out.Output, out.Cleaning = ans.Text, ans.Code, ans.Output, ans.Cleaning
		for _, t := range ans.Tables {
			out.Tables = append(out.Tables, TableOutput{Name: t.Name, Columns: t.Columns, Rows: t.Rows, TotalRows: t.TotalRows, TotalColumns: t.TotalColumns})
		}
		for _, f := range ans.Files {
			out.Files = append(out.Files, f.Name)
		}
	}
	var images []mcp.Content
	for _, c := range ans.Charts {
		out.Charts = append(out.Charts, ChartOutput{Name: c.Name, Title: c.Title})
		png, err := h.svc.AnalysisFile(ctx, h.tenant, in.Analysis, c.Name, q.N)
		if err != nil || len(png.Content) == 0 { // withheld or over the budget: named in the text only
			continue
		}
		images = append(images, &mcp.ImageContent{MIMEType: "image/png", Data: png.Content})
	}
	return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: answerText(out)}}, images...)}, out, nil
}

// agentProgress says in a line what an event of an agent run tells.
func agentProgress(e service.Event) string {
	switch {
	case e.Kind == service.EventStdout || e.Kind == service.EventStderr:
		return string(e.Kind) + ": " + text(e.Output)
	case e.Agent == nil:
		return string(e.Kind)
	case e.Agent.Step != nil:
		return fmt.Sprintf("%s (attempt %d): %s", e.Agent.Step.Kind, e.Agent.Step.Attempt, e.Agent.Step.Message)
	case e.Agent.Code != nil:
		return fmt.Sprintf("code (attempt %d):\n%s", e.Agent.Code.Attempt, e.Agent.Code.Code)
	case e.Agent.Execution != nil:
		return fmt.Sprintf("execution (attempt %d): %s", e.Agent.Execution.Attempt, e.Agent.Execution.Status)
	case e.Agent.Run != nil:
		return "agent run " + e.Agent.Run.ID + ": " + string(e.Agent.Run.Status)
	case e.Agent.Rebuild != nil:
		r := e.Agent.Rebuild
		return fmt.Sprintf("session rebuilt: %d datasets loaded and %d cells replayed in session %s (%d ms)", r.Datasets, r.Cells, r.SessionID, r.DurationMS)
	}
	return string(e.Kind)
}

// maxTableText bounds the rows of each table written in an answer's text.
const maxTableText = 20

// answerText is what a model reads of an answer.
func answerText(a AnswerOutput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s\n", a.Status)
	if a.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", a.Reason)
	}
	if a.Text != "" {
		fmt.Fprintf(&b, "answer: %s\n", a.Text)
	}
	if a.Code != "" {
		fmt.Fprintf(&b, "code:\n%s\n", strings.TrimRight(a.Code, "\n"))
	}
	if a.Output != "" {
		fmt.Fprintf(&b, "output:\n%s\n", strings.TrimRight(a.Output, "\n"))
	}
	for _, t := range a.Tables {
		fmt.Fprintf(&b, "table %s (%d rows × %d columns):\n%s\n", t.Name, t.TotalRows, t.TotalColumns, strings.Join(t.Columns, "\t"))
		for _, r := range t.Rows[:min(len(t.Rows), maxTableText)] {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = fmt.Sprint(v)
			}
			b.WriteString(strings.Join(cells, "\t") + "\n")
		}
	}
	for _, c := range a.Charts {
		fmt.Fprintf(&b, "chart: %s %q\n", c.Name, c.Title)
	}
	for _, f := range a.Files {
		fmt.Fprintf(&b, "file: %s (in the analysis's session)\n", f)
	}
	return b.String()
}
