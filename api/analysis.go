package api

import (
	"encoding/json"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// AnalysisRequest is the JSON body of POST /v1/analyses: the datasets of
// a new analysis, given whole (Datasets) or named among the files of one
// of the caller's open sessions (SessionID and Files); one way or the
// other, not both. (The same endpoint takes a multipart/form-data
// upload: each file a part, and the optional fields image and limits.)
type AnalysisRequest struct {
	// Datasets are the files to analyse: CSV or TSV, Excel, JSON or JSON
	// Lines, each loaded into a DataFrame named after it.
	Datasets []AnalysisDataset `json:"datasets,omitempty"`
	// SessionID names an open session of the caller whose Files are read
	// (at most the request-body limit, all together) as the datasets.
	SessionID string `json:"session_id,omitempty"`
	// Files are paths in that session's working directory; each becomes a
	// dataset named by its base name.
	Files []string `json:"files,omitempty"`
	// Image names the image the analysis runs in, among those the server
	// offers; "" is the server's default. It needs pandas.
	Image string `json:"image,omitempty"`
	// Limits are the analysis session's limits, within the server's
	// maxima; zero fields take the analyst's defaults (more time and
	// memory than a run's), lowered to the maxima.
	Limits sandbox.Limits `json:"limits"`
}

// AnalysisDataset is one dataset of an AnalysisRequest.
type AnalysisDataset struct {
	// Name is the file's name, one path component, such as "sales.csv":
	// its extension tells the format, its stem the DataFrame's name.
	Name string `json:"name"`
	// Content is the file's bytes.
	Content sandbox.Data `json:"content"`
}

// Analysis describes a data analysis: the answer to POST /v1/analyses and
// GET /v1/analyses/{id}, and an item of GET /v1/analyses (without its
// profile and questions).
type Analysis struct {
	// ID names the analysis.
	ID string `json:"id"`
	// SessionID names the session holding its DataFrames; it counts
	// against the caller's open sessions and expires when idle like any
	// session. "" when none is open: the session ended (closed, expired,
	// or the server restarted) and the analysis is kept; its next
	// question opens a new session and rebuilds its state (RebuiltAt).
	// DELETE /v1/analyses/{id} deletes the analysis.
	SessionID string `json:"session_id"`
	// Image names the image it runs in.
	Image string `json:"image"`
	// Datasets are the datasets' names, in order.
	Datasets []string `json:"datasets"`
	// Asking is the number of the question being answered, 0 when none.
	Asking int `json:"asking,omitempty"`
	// Questions counts the questions asked so far.
	Questions int `json:"questions"`
	// Profile is the datasets' profile as JSON (schema AnalysisProfile):
	// per DataFrame its shape, columns with dtypes, missing and distinct
	// counts, summary statistics, top values, sample rows and warnings; a
	// file that could not be read has an error saying why. Redacted.
	Profile json.RawMessage `json:"profile,omitempty"`
	// ProfileText is the same profile as text, for a person; redacted.
	ProfileText string `json:"profile_text,omitempty"`
	// Conversation lists the questions so far, oldest first (at most the
	// last 50), each with its agent run but without the answer's details
	// (GET /v1/analyses/{id}/questions/{n} has them); in GET
	// /v1/analyses/{id} only.
	Conversation []AnalysisQuestion `json:"conversation,omitempty"`
	// CreatedAt is when it was created.
	CreatedAt time.Time `json:"created_at"`
	// RebuiltAt is when its session was last rebuilt, absent if never: a
	// question to an analysis whose session had ended opened a new one,
	// loaded the stored datasets into it and replayed RebuiltCells
	// cells, the programs that had built the state of the session before
	// (those that succeeded, in order).
	RebuiltAt *time.Time `json:"rebuilt_at,omitempty"`
	// RebuiltCells is how many cells that rebuild replayed.
	RebuiltCells int `json:"rebuilt_cells,omitempty"`
}

// AnalysisRebuild is the data of a question's session_rebuilt event: the
// analysis's session had ended, and a new one was opened for the
// question, the datasets loaded and the stored cells replayed, before
// the question is answered.
type AnalysisRebuild struct {
	// SessionID names the new session.
	SessionID string `json:"session_id"`
	// Datasets is how many datasets were loaded, Cells how many cells
	// were replayed.
	Datasets int `json:"datasets"`
	Cells    int `json:"cells"`
	// RebuiltAt is when the rebuild ended; DurationMS how long it took.
	RebuiltAt  time.Time `json:"rebuilt_at"`
	DurationMS int64     `json:"duration_ms"`
}

// AnalysisList is the answer to GET /v1/analyses: the caller's analyses,
// newest first, a page at a time (?limit=, ?cursor=).
type AnalysisList struct {
	// Analyses are the analyses, without their profiles.
	Analyses []Analysis `json:"analyses"`
	// Next is the cursor of the next page (GET /v1/analyses?cursor=),
	// absent after the last.
	Next string `json:"next,omitempty"`
}

// QuestionRequest is the body of POST /v1/analyses/{id}/questions: a
// question about the data, with the budgets of the agent run answering
// it. As for an agent run, the model is the server's, zero budgets take
// the server's defaults, and a budget above its maximum is refused.
type QuestionRequest struct {
	// Question is the question, in plain language. A format it asks for
	// (as "@mean_fare[value]") is kept exactly in the answer.
	Question string `json:"question"`
	// Approve makes every program wait for a person's approval (POST
	// /v1/analyses/{id}/questions/{n}/approvals/{approval_id}) before it
	// runs.
	Approve bool `json:"approve,omitempty"`
	// TextMode asks the model for fenced code instead of tool calls.
	TextMode bool `json:"text_mode,omitempty"`
	// MaxRetries is how many failed attempts may follow the first; absent
	// is the server's default, 0 allows the first attempt only.
	MaxRetries *int `json:"max_retries,omitempty"`
	// MaxTokens bounds the tokens of all the model's calls together.
	MaxTokens int `json:"max_tokens,omitempty"`
	// MaxExecMS bounds the execution time of all programs together.
	MaxExecMS int64 `json:"max_exec_ms,omitempty"`
	// CellTimeoutMS bounds one program's execution.
	CellTimeoutMS int64 `json:"cell_timeout_ms,omitempty"`
	// MaxArtifactBytes bounds the bytes of all artifacts produced.
	MaxArtifactBytes int64 `json:"max_artifact_bytes,omitempty"`
}

// AnalysisQuestion is one question of an analysis: the answer to POST
// /v1/analyses/{id}/questions (at once, its run running) and GET
// /v1/analyses/{id}/questions/{n}, an item of GET
// /v1/analyses/{id}/questions, and the data of a question stream's
// answer event.
type AnalysisQuestion struct {
	// N numbers the question in its analysis, from 1.
	N int `json:"n"`
	// Run is the agent run answering it: its status (running,
	// awaiting_approval, then answered, unverified, ...), the question as
	// its task, the answer's text, the program waiting for approval, and
	// once it ended, in GET .../questions/{n}, its trace.
	Run AgentRun `json:"run"`
	// Answer is the analyst's answer as JSON (schema AnalysisAnswer),
	// once the run ended with one: text, the code that produced it and
	// its output, tables (HTML and data), charts (with their titles and
	// axis labels) and files, without their contents (GET
	// /v1/analyses/{id}/files/{name} serves them), and what cleaning
	// changed. Every string in it is redacted.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// AnalysisQuestionList is the answer to GET /v1/analyses/{id}/questions:
// the conversation, oldest first, with the answers as data.
type AnalysisQuestionList struct {
	// Questions are the questions, without their traces.
	Questions []AnalysisQuestion `json:"questions"`
}
