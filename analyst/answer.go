package analyst

import (
	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Answer is the analyst's answer to one question, with its evidence.
type Answer struct {
	// Question is the question as asked.
	Question string `json:"question"`
	// Status is how the agent's run ended: agent.StatusAnswered, or
	// agent.StatusUnverified for an answer the verifier gave no readable
	// verdict on; any other status has no answer (Reason says why).
	Status agent.Status `json:"status"`
	Reason string       `json:"reason,omitempty"`
	// Text is the answer, in the model's words.
	Text string `json:"text,omitempty"`
	// Code is the code whose run produced the answer, Output its standard
	// output.
	Code   string `json:"code,omitempty"`
	Output string `json:"output,omitempty"`
	// Tables are the DataFrames that code showed (show_table, or the
	// value of its last line), as HTML and as data.
	Tables []ResultTable `json:"tables,omitempty"`
	// Charts are the matplotlib figures that code left open.
	Charts []Chart `json:"charts,omitempty"`
	// Files are the files the question's code wrote or changed in the
	// working directory (such as a cleaned CSV), the latest version of
	// each, from every execution that succeeded.
	Files []sandbox.Artifact `json:"files,omitempty"`
	// Cleaning holds the summaries of the crucible_clean calls of the
	// question's executions that succeeded.
	Cleaning []CleanSummary `json:"cleaning,omitempty"`
	// TraceID names the agent run; Budget is what it used.
	TraceID string          `json:"trace_id"`
	Budget  agent.BudgetUse `json:"budget"`
	// Trace is the agent run's whole record (every model call and
	// execution), for those who need it; it is not part of the JSON.
	Trace *agent.Trace `json:"-"`
}

// Answered reports whether there is an answer: the status is answered
// or unverified.
func (a *Answer) Answered() bool { return a.Status.HasAnswer() }

// ResultTable is a DataFrame the code showed: its first rows as HTML and
// as data.
type ResultTable struct {
	// Name is the name the code gave it, if any.
	Name string `json:"name,omitempty"`
	// Columns are the column labels; a DataFrame's named or non-default
	// index comes first, as columns.
	Columns []string `json:"columns"`
	// Rows are the first rows (at most MaxTableRows), each value a JSON
	// number, string, boolean or null.
	Rows [][]any `json:"rows"`
	// TotalRows and TotalColumns are the DataFrame's shape.
	TotalRows    int `json:"total_rows"`
	TotalColumns int `json:"total_columns"`
	// HTML is the same rows as pandas renders them.
	HTML string `json:"html"`
}

// Chart is a figure the code left open, as PNG, with its labels.
type Chart struct {
	sandbox.Artifact
	// Title is the figure's title: its suptitle, else its first axes'
	// title.
	Title string `json:"title"`
	// Axes hold each axes' title and labels.
	Axes []kernel.AxesLabels `json:"axes,omitempty"`
}

// CleanSummary is what crucible_clean changed.
type CleanSummary struct {
	// Source is the dataset's path (or "DataFrame"); Output the cleaned
	// file's.
	Source string `json:"source"`
	Output string `json:"output"`
	// RowsIn and RowsOut count rows before and after; DuplicatesRemoved
	// the rows dropped as equal to an earlier one.
	RowsIn            int `json:"rows_in"`
	RowsOut           int `json:"rows_out"`
	DuplicatesRemoved int `json:"duplicates_removed"`
	// Changed counts the values changed, per column.
	Changed map[string]int `json:"changed"`
	// Dates are the date columns standardised, and how their values
	// parsed.
	Dates map[string]DateParse `json:"dates"`
	// Numbers are the columns of numbers written as text (thousands
	// separators, a decimal comma, a percent sign, a currency) rewritten
	// as plain numbers.
	Numbers map[string]NumberParse `json:"numbers,omitempty"`
	// Case are the categorical columns whose spellings that differed only
	// in case were unified.
	Case map[string]CaseFold `json:"case,omitempty"`
	// Warnings are the values that failed to parse (at most 1000);
	// WarningsTotal counts them all.
	Warnings      []CleanWarning `json:"warnings"`
	WarningsTotal int            `json:"warnings_total"`
}

// NumberParse is how one column of numbers written as text was read.
type NumberParse struct {
	// Converted counts the values rewritten as plain numbers, Failed
	// those kept as they were (not numbers in the column's form).
	Converted int `json:"converted"`
	Failed    int `json:"failed"`
	// Kind is how the numbers were written: "thousands" (separators),
	// "decimal comma", "percent" (5% is rewritten 5: the unit stays
	// percent) or "currency".
	Kind string `json:"kind"`
	// Unit is the column's unit: "%", the currency ($, EUR, ...) or "".
	Unit string `json:"unit"`
}

// CaseFold is how one categorical column's spellings were unified.
type CaseFold struct {
	// Changed counts the values rewritten; Groups the values that had
	// more than one spelling.
	Changed int `json:"changed"`
	Groups  int `json:"groups"`
	// Spellings maps each spelling kept (the most frequent) to those it
	// replaced; at most 20 of each.
	Spellings map[string][]string `json:"spellings"`
}

// DateParse is how one date column's values parsed.
type DateParse struct {
	Parsed int `json:"parsed"`
	Failed int `json:"failed"`
	// Rate is Parsed over the values present, from 0 to 1.
	Rate float64 `json:"rate"`
	// Format is the standard the dates were written in; DayFirst whether
	// 03/04 was read as 3 April.
	Format   string `json:"format"`
	DayFirst bool   `json:"dayfirst"`
}

// CleanWarning is one value that failed to parse.
type CleanWarning struct {
	// Row numbers the data row, from 1 (the header not counted).
	Row    int    `json:"row"`
	Column string `json:"column"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}
