package analyst

// End-to-end tests of Ask: the model is SCRIPTED (no language model can
// run here; see scripted_test.go), the code runs in a real session of
// the data-science image (root), on DABench tables and small messy files.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// dabenchQuestion is one DABench question and its labelled answers.
type dabenchQuestion struct {
	ID          int    `json:"id"`
	Question    string `json:"question"`
	Constraints string `json:"constraints"`
	Format      string `json:"format"`
	File        string `json:"file_name"`
	Answers     [][2]string
}

// prompt is the question as asked: the question, its constraints and
// the format of the answer.
func (q dabenchQuestion) prompt() string {
	return q.Question + "\n" + q.Constraints + "\n" + q.Format
}

// loadDabench reads question id and its labels from the dabench data set.
func loadDabench(t *testing.T, id int) dabenchQuestion {
	t.Helper()
	dir := filepath.Dir(testenv.Dataset(t, "dabench/tables"))
	var q dabenchQuestion
	find := func(file string, v any) {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var head struct{ ID int }
			if json.Unmarshal(sc.Bytes(), &head) == nil && head.ID == id {
				if err := json.Unmarshal(sc.Bytes(), v); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatalf("no id %d in %s", id, file)
	}
	find("questions.jsonl", &q)
	var labels struct {
		Answers [][2]string `json:"common_answers"`
	}
	find("labels.jsonl", &labels)
	q.Answers = labels.Answers
	return q
}

// dabenchDataset reads a dabench table as a Dataset.
func dabenchDataset(t testing.TB, name string) Dataset {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Dataset(t, "dabench/tables"), name))
	if err != nil {
		t.Fatal(err)
	}
	return Dataset{Name: name, Content: b}
}

// ask asks question with the scripted model m, failing t on an error.
func ask(t *testing.T, a *Analysis, m *scriptedModel, question string, opt AskOptions) *Answer {
	t.Helper()
	opt.Model = m.provider()
	ans, err := a.Ask(context.Background(), question, opt)
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	return ans
}

// contains asserts that s holds every one of parts.
func contains(t testing.TB, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s lacks %q:\n%s", what, p, s)
		}
	}
}

// DABench question 24 (mean age, insurance.csv) through the whole loop:
// the model sees the analyst's instructions and the profile, computes the
// mean from the loaded df, answers without the format the question asks,
// is told so, and restates as @mean_age[...] with the labelled value, at
// no cost in attempts. Progress events come in order, the output as it
// runs. A follow-up then sees the first question, its answer and code in
// the history, and uses the variable the first one defined.
func TestAskDabenchWithFollowUp(t *testing.T) {
	q := loadDabench(t, 24)
	label := "@" + q.Answers[0][0] + "[" + q.Answers[0][1] + "]"
	a := openAnalysis(t, newRuntime(t), dabenchDataset(t, q.File))
	code := "mean_age = round(sum(df['age'].dropna()) / df['age'].notna().sum(), 2)\nprint(mean_age)"
	m := newScriptedModel(t,
		seeing(func(t testing.TB, req modelRequest) {
			contains(t, "system prompt", req.System, "You are a data analyst", "never read the files again",
				"- insurance: data/insurance.csv", "df is insurance.", "Profile:", `age`, "show_table(", "crucible_clean(")
			if len(req.Messages) != 1 || req.Messages[0].Text != q.prompt() {
				t.Errorf("first question's messages = %+v, want only the question", req.Messages)
			}
		}, run(code)),
		finalAnswer("The mean age is "+q.Answers[0][1]+"."),
		seeing(func(t testing.TB, req modelRequest) {
			contains(t, "feedback", req.last().Text, "the answer lacks @mean_age[...]", "Restate the answer")
		}, finalAnswer(label)),
	)
	var events []Event
	ans := ask(t, a, m, q.prompt(), AskOptions{OnEvent: func(e Event) { events = append(events, e) }})
	if ans.Status != agent.StatusAnswered || ans.Text != label || ans.Budget.FailedAttempts != 0 {
		t.Fatalf("answer: status %s (%s), text %q, %d failed attempts; want answered %q, none failed", ans.Status, ans.Reason, ans.Text, ans.Budget.FailedAttempts, label)
	}
	if ans.Code != code || ans.Output != q.Answers[0][1]+"\n" || ans.TraceID == "" || ans.Trace == nil {
		t.Errorf("evidence: code %q, output %q, trace %q", ans.Code, ans.Output, ans.TraceID)
	}
	var kinds []string
	for _, e := range events {
		if len(kinds) == 0 || kinds[len(kinds)-1] != string(e.Kind) {
			kinds = append(kinds, string(e.Kind))
		}
	}
	if want := "model code output status model retry model verify answer"; strings.Join(kinds, " ") != want {
		t.Errorf("events %s, want %s", strings.Join(kinds, " "), want)
	}
	streamed := ""
	for _, e := range events {
		switch e.Kind {
		case EventCode:
			if e.Code != code || e.Attempt != 1 {
				t.Errorf("code event %+v", e)
			}
		case EventOutput:
			if e.Stream != sandbox.StreamStdout {
				t.Errorf("output event %+v", e)
			}
			streamed += e.Text
		case EventStatus:
			if e.Status != sandbox.StatusOK {
				t.Errorf("status event %+v", e)
			}
		case EventAnswer:
			if e.Answer != ans {
				t.Errorf("answer event carries %p, want the answer %p", e.Answer, ans)
			}
		}
	}
	if streamed != ans.Output {
		t.Errorf("output streamed %q, want the output %q", streamed, ans.Output)
	}

	m.script(
		seeing(func(t testing.TB, req modelRequest) {
			if len(req.Messages) != 3 {
				t.Fatalf("follow-up messages: %d, want the first question, its recap, the follow-up: %+v", len(req.Messages), req.Messages)
			}
			if req.Messages[0].Role != "user" || req.Messages[0].Text != q.prompt() {
				t.Errorf("history's question = %+v", req.Messages[0])
			}
			contains(t, "history's answer", req.Messages[1].Text, "Answer: "+label, code, "its variables are still defined", "Its output:\n"+q.Answers[0][1])
		}, run("print(mean_age, round(df['bmi'].mean(), 2))")),
		finalAnswer("The mean age is 39.21 and the mean BMI 30.66."),
	)
	follow := ask(t, a, m, "And the mean BMI next to it?", AskOptions{})
	if follow.Status != agent.StatusAnswered || follow.Output != "39.21 30.66\n" {
		t.Errorf("follow-up: status %s (%s), output %q; want answered, 39.21 30.66", follow.Status, follow.Reason, follow.Output)
	}
	if n := len(m.requests()); n != 5 {
		t.Errorf("the model received %d coder requests, want 5 (3 for the question, 2 for the follow-up)", n)
	}
	if conv := a.Conversation(); len(conv) != 2 || conv[0] != ans || conv[1] != follow {
		t.Errorf("conversation = %v, want the two answers", conv)
	}
}

// A chart with a title and axis labels, a table shown with show_table and
// a DataFrame as the last value: the answer holds the chart as PNG with
// its labels recorded, and both tables as HTML and as data; the helpers'
// records are neither the user's files nor shown to the model.
func TestAskChartAndTables(t *testing.T) {
	a := openAnalysis(t, newRuntime(t), dabenchDataset(t, "insurance.csv"))
	code := `import matplotlib.pyplot as plt
by_region = df.groupby('region')['charges'].mean().round(2)
fig, ax = plt.subplots()
by_region.plot.bar(ax=ax)
ax.set_title('Mean charges by region')
ax.set_xlabel('region')
ax.set_ylabel('mean charges (USD)')
show_table(by_region, 'charges by region')
df.groupby('sex')[['age']].mean().round(2)`
	m := newScriptedModel(t, run(code),
		seeing(func(t testing.TB, req modelRequest) {
			if strings.Contains(req.last().Text, ".crucible") {
				t.Errorf("the model was shown the helpers' records:\n%s", req.last().Text)
			}
			contains(t, "tool result", req.last().Text, "artifact: figure-1.png")
		}, finalAnswer("The southeast has the highest mean charges.")))
	ans := ask(t, a, m, "Plot the mean charges by region.", AskOptions{})
	if !ans.Answered() {
		t.Fatalf("status %s (%s)", ans.Status, ans.Reason)
	}
	if len(ans.Charts) != 1 {
		t.Fatalf("charts = %+v, want 1", ans.Charts)
	}
	c := ans.Charts[0]
	want := []kernel.AxesLabels{{Title: "Mean charges by region", XLabel: "region", YLabel: "mean charges (USD)"}}
	if c.Name != "figure-1.png" || c.Title != "Mean charges by region" || !slices.Equal(c.Axes, want) {
		t.Errorf("chart %s: title %q, axes %+v; want figure-1.png, %+v", c.Name, c.Title, c.Axes, want)
	}
	if _, err := png.Decode(bytes.NewReader(c.Content)); err != nil {
		t.Errorf("the chart is not a PNG: %v", err)
	}
	if len(ans.Tables) != 2 {
		t.Fatalf("tables = %+v, want 2", ans.Tables)
	}
	shown, value := ans.Tables[0], ans.Tables[1]
	if shown.Name != "charges by region" || !slices.Equal(shown.Columns, []string{"region", "charges"}) || len(shown.Rows) != 4 || shown.TotalRows != 4 {
		t.Errorf("shown table: %+v", shown)
	} else if fmt.Sprint(shown.Rows[0]) != "[northeast 13406.38]" {
		t.Errorf("shown table's first row = %v", shown.Rows[0])
	}
	if !slices.Equal(value.Columns, []string{"sex", "age"}) || len(value.Rows) != 2 || fmt.Sprint(value.Rows[0]) != "[female 39.5]" {
		t.Errorf("value table: %+v", value)
	}
	for _, tb := range ans.Tables {
		contains(t, "table HTML", tb.HTML, "<table", "</table>")
	}
	if len(ans.Files) != 0 {
		t.Errorf("files = %v, want none (records and figures are not files)", ans.Files)
	}
}

// "Normalise this CSV" on a messy file (spaces, dates in four formats, a
// duplicate only once trimmed and standardised, a bad date, a missing
// one): crucible_clean writes the cleaned file, the answer carries it and
// the summary: rows in and out, duplicates removed, values changed per
// column, the date parse rate, and a warning for the row that failed.
func TestAskCleaning(t *testing.T) {
	messy := "name,joined,city\n" +
		" Alice ,2024-01-05,Paris\n" +
		"Bob,05/02/2024,  Lyon\n" +
		" Alice ,2024-01-05,Paris\n" +
		"Alice,Jan 5 2024,Paris\n" +
		"Carol,2024-13-45,Nice\n" +
		"Dan,,Nice\n" +
		"Eve,17/03/2024,Nice\n"
	a := openAnalysis(t, newRuntime(t), Dataset{Name: "people.csv", Content: []byte(messy)})
	m := newScriptedModel(t,
		run("summary = crucible_clean('people', trim=True, dates='auto', dedupe=True, out='people_clean.csv')\nprint(summary['rows_in'], summary['rows_out'])"),
		finalAnswer("7 rows in, 5 out: 2 duplicates removed; 1 bad date in row 5."))
	ans := ask(t, a, m, "Normalise this CSV: trim whitespace, standardise dates, remove duplicates.", AskOptions{})
	if !ans.Answered() || ans.Output != "7 5\n" {
		t.Fatalf("status %s (%s), output %q", ans.Status, ans.Reason, ans.Output)
	}
	if len(ans.Files) != 1 || ans.Files[0].Name != "people_clean.csv" {
		t.Fatalf("files = %v, want people_clean.csv alone", ans.Files)
	}
	wantCSV := "name,joined,city\nAlice,2024-01-05,Paris\nBob,2024-02-05,Lyon\nCarol,2024-13-45,Nice\nDan,,Nice\nEve,2024-03-17,Nice\n"
	if got := string(ans.Files[0].Content); got != wantCSV {
		t.Errorf("cleaned file:\n%s\nwant:\n%s", got, wantCSV)
	}
	want := CleanSummary{
		Source: "data/people.csv", Output: "people_clean.csv", RowsIn: 7, RowsOut: 5, DuplicatesRemoved: 2,
		Changed:  map[string]int{"name": 2, "city": 1, "joined": 3},
		Dates:    map[string]DateParse{"joined": {Parsed: 5, Failed: 1, Rate: 0.8333, Format: "%Y-%m-%d", DayFirst: true}},
		Warnings: []CleanWarning{{Row: 5, Column: "joined", Value: "2024-13-45", Reason: "not a date"}}, WarningsTotal: 1,
	}
	if len(ans.Cleaning) != 1 || fmt.Sprintf("%+v", ans.Cleaning[0]) != fmt.Sprintf("%+v", want) {
		t.Errorf("cleaning = %+v\nwant       [%+v]", ans.Cleaning, want)
	}
}

// Ask refuses bad input before any work, naming the field.
func TestAskInput(t *testing.T) {
	a := &Analysis{}
	m := newScriptedModel(t)
	for _, tc := range []struct {
		name, question, field string
		opt                   AskOptions
	}{
		{"empty question", "  \n", "question", AskOptions{Model: m.provider()}},
		{"huge question", strings.Repeat("x", MaxQuestionBytes+1), "question", AskOptions{Model: m.provider()}},
		{"no model", "mean age?", "model", AskOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.Ask(context.Background(), tc.question, tc.opt)
			var ie *sandbox.InputError
			if !asInput(err, &ie) || ie.Field != tc.field {
				t.Errorf("Ask = %v, want an input error on %s", err, tc.field)
			}
		})
	}
}

// stdoutOf is the program's stdout as the agent reports a successful
// execution to the model (agent's describe): the lines after "stdout:".
func stdoutOf(toolResult string) string {
	_, out, _ := strings.Cut(toolResult, "stdout:\n")
	out, _, _ = strings.Cut(out, "\nvalue of the last expression")
	return strings.TrimSpace(out)
}

// DABench questions through the whole loop, one analysis per table: the
// scripted model runs pandas code on the loaded df that prints the answer
// in the question's format, then answers with what the sandbox printed
// (read from the tool result it was sent). Every labelled value must be
// in the answer as @name[value]: the platform loads the real files
// (a byte-order mark and CR line ends in one of them) as the labels
// expect.
func TestAskDabenchQuestions(t *testing.T) {
	for _, tc := range []struct {
		id   int
		code string
	}{
		{26, `print(f"@correlation_coefficient[{df['charges'].corr(df['children']):.2f}]")`},
		{64, `print(f"@mean_wage[{df['wage'].mean():.2f}] @std_wage[{df['wage'].std():.2f}]")`},
		{174, `print(f"@fare_skewness[{df['Fare'].skew():.2f}]")`},
		{506, `print(f"@average_reviews[{df['review_count'].mean():.2f}]")`},
		{517, `print(f"@correlation_pclass_fare[{df['Pclass'].corr(df['Fare']):.2f}]")`},
	} {
		q := loadDabench(t, tc.id)
		t.Run(fmt.Sprintf("%d %s", tc.id, q.File), func(t *testing.T) {
			a := openAnalysis(t, newRuntime(t), dabenchDataset(t, q.File))
			m := newScriptedModel(t, run(tc.code), func(t testing.TB, req modelRequest) modelReply {
				return finalAnswer(stdoutOf(req.last().Text))(t, req)
			})
			ans := ask(t, a, m, q.prompt(), AskOptions{})
			if !ans.Answered() || ans.Budget.FailedAttempts != 0 {
				t.Fatalf("status %s (%s), %d failed attempts, output %q", ans.Status, ans.Reason, ans.Budget.FailedAttempts, ans.Output)
			}
			for _, l := range q.Answers {
				if want := "@" + l[0] + "[" + l[1] + "]"; !strings.Contains(ans.Text, want) {
					t.Errorf("answer %q lacks the label %s", ans.Text, want)
				}
			}
		})
	}
}
