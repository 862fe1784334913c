package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// maxShownRows bounds the rows of a table printed on the terminal (all
// of them, up to the answer's bound, are in --json).
const maxShownRows = 20

// transcript is what `crucible analyst --json` prints.
type transcript struct {
	Profile json.RawMessage     `json:"profile"`
	Answers []*transcriptAnswer `json:"answers"`
}

// transcriptAnswer is an answer whose charts and files were saved: they
// are named by path, their content left out.
type transcriptAnswer struct {
	*service.AnalysisAnswer
	Charts []savedChart `json:"charts,omitempty"`
	Files  []savedFile  `json:"files,omitempty"`
}

// savedFile is an artifact and where it was saved, or why it was not.
type savedFile struct {
	Name     string `json:"name"`
	MIME     string `json:"mime"`
	Size     int64  `json:"size"`
	Path     string `json:"path,omitempty"`
	NotSaved string `json:"not_saved,omitempty"`
}

// savedChart is a saved chart with its labels.
type savedChart struct {
	savedFile
	Title string              `json:"title"`
	Axes  []service.ChartAxes `json:"axes,omitempty"`
}

// notSavedNoOut is why a chart or file was not saved without --out.
const notSavedNoOut = "no --out DIR given"

// saveAnswer saves ans's charts and files in dir (never replacing a
// file; with dir "", nothing is written) and returns it as the
// transcript holds it.
func saveAnswer(ans *service.AnalysisAnswer, dir string) *transcriptAnswer {
	t := &transcriptAnswer{AnalysisAnswer: ans}
	for _, c := range ans.Charts {
		t.Charts = append(t.Charts, savedChart{savedFile: saveArtifact(c.Artifact, dir), Title: c.Title, Axes: c.Axes})
	}
	for _, f := range ans.Files {
		t.Files = append(t.Files, saveArtifact(f, dir))
	}
	return t
}

func saveArtifact(a sandbox.Artifact, dir string) savedFile {
	s := savedFile{Name: a.Name, MIME: a.MIME, Size: a.Size}
	if why := unsavedReason(a); why != "" {
		s.NotSaved = why
		return s
	}
	if dir == "" {
		s.NotSaved = notSavedNoOut
		return s
	}
	p, err := saveNew(dir, a.Name, a.Content)
	if err != nil {
		s.NotSaved = err.Error()
	} else {
		s.Path = p
	}
	return s
}

// write prints the transcript as indented JSON.
func (t *transcript) write(w *screen) error {
	enc := json.NewEncoder(w) // inert on a terminal, and still the same JSON
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err := enc.Encode(t)
	w.flush()
	return err
}

// progressOn shows a question's progress, from its events, on d's
// stderr, the output of the code as it runs included (inert on a
// terminal, as everything the program wrote). The events come one at a
// time, from one goroutine.
func progressOn(d *display) func(service.Event) {
	var live *liveOutput
	return func(e service.Event) {
		switch a := e.Agent; {
		case e.Kind == service.EventStdout || e.Kind == service.EventStderr:
			if live != nil {
				live.output(sandbox.Stream(e.Kind), e.Output)
			}
		case a == nil:
		case a.Code != nil:
			d.say("analyst: attempt %d · running the code", a.Code.Attempt)
			if live != nil {
				live.close() // the last cell failed in the platform: no status came
			}
			live = (&display{stdout: d.stderr, stderr: d.stderr, styled: d.styled}).live()
		case a.Execution != nil:
			if live != nil {
				live.close()
				live = nil
			}
			if x := a.Execution; x.Reason != "" {
				d.say("analyst: attempt %d · status %s (%s)", x.Attempt, x.Status, x.Reason)
			} else {
				d.say("analyst: attempt %d · status %s", x.Attempt, x.Status)
			}
		case a.Step != nil:
			d.say("analyst: attempt %d · %s", a.Step.Attempt, a.Step.Message)
		}
	}
}

// printQuestion shows question n on d's stdout, before its progress (on
// stderr) and its answer, so that stdout alone reads as the conversation.
func printQuestion(d *display, n int, text string) {
	fmt.Fprintf(d.stdout, "\nquestion %d: %s\n", n, text)
	d.stdout.flush()
}

// printAnswer shows an answer for a person on d's stdout. Everything but
// the labels is the model's, a program's or the data's, so it goes
// through d.
func printAnswer(d *display, t *transcriptAnswer) {
	w := d.stdout
	ans := t.AnalysisAnswer
	fmt.Fprintln(w)
	printOutcome(w, ans.Status, ans.Reason, ans.Text, ans.Code, ans.Output)
	for _, tb := range ans.Tables {
		printTable(w, tb)
	}
	for _, c := range t.Charts {
		fmt.Fprintf(w, "\nchart %q", c.Title)
		for _, ax := range c.Axes {
			if ax.XLabel != "" || ax.YLabel != "" { // an unlabelled chart's "(x: , y: )" says nothing
				fmt.Fprintf(w, " (x: %s, y: %s)", ax.XLabel, ax.YLabel)
			}
		}
		printSaved(w, c.savedFile)
	}
	for _, f := range t.Files {
		fmt.Fprint(w, "\nfile")
		printSaved(w, f)
	}
	for _, c := range ans.Cleaning {
		printCleaning(w, c)
	}
	b := ans.Budget
	fmt.Fprintf(w, "\nattempts %d/%d (%d failed) · tokens %d · execution %.0f ms · trace %s\n", b.Attempts, b.MaxAttempts, b.FailedAttempts, b.Tokens, b.ExecMS, ans.TraceID)
	w.flush()
}

func printSaved(w io.Writer, f savedFile) {
	if f.NotSaved != "" {
		fmt.Fprintf(w, " %s not saved: %s\n", f.Name, f.NotSaved)
		return
	}
	fmt.Fprintf(w, ": %s (%s)\n", f.Path, f.MIME)
}

// printTable prints a table's first rows, tab-separated.
func printTable(w io.Writer, t service.ResultTable) {
	fmt.Fprintf(w, "\ntable")
	if t.Name != "" {
		fmt.Fprintf(w, " %q", t.Name)
	}
	fmt.Fprintf(w, " (%d rows", t.TotalRows)
	if shown := len(t.Columns); t.TotalColumns > shown {
		fmt.Fprintf(w, ", %d of %d columns shown", shown, t.TotalColumns)
	}
	fmt.Fprintf(w, "):\n%s\n", strings.Join(t.Columns, "\t"))
	for _, row := range t.Rows[:min(len(t.Rows), maxShownRows)] {
		cells := make([]string, len(row))
		for i, v := range row {
			if v != nil {
				cells[i] = fmt.Sprint(v)
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	if more := t.TotalRows - min(len(t.Rows), maxShownRows); more > 0 {
		fmt.Fprintf(w, "… %d more rows\n", more)
	}
}

// printCleaning prints a cleaning summary, every warning included.
func printCleaning(w io.Writer, c service.CleanSummary) {
	fmt.Fprintf(w, "\ncleaning %s → %s: %d rows in, %d out, %d duplicates removed\n", c.Source, c.Output, c.RowsIn, c.RowsOut, c.DuplicatesRemoved)
	cols := make([]string, 0, len(c.Changed))
	for col := range c.Changed {
		cols = append(cols, col)
	}
	slices.Sort(cols)
	for i, col := range cols {
		cols[i] = fmt.Sprintf("%s %d", col, c.Changed[col])
	}
	if len(cols) > 0 {
		fmt.Fprintf(w, "  values changed: %s\n", strings.Join(cols, ", "))
	}
	dates := make([]string, 0, len(c.Dates))
	for col := range c.Dates {
		dates = append(dates, col)
	}
	slices.Sort(dates)
	for _, col := range dates {
		p := c.Dates[col]
		fmt.Fprintf(w, "  dates %s: %d parsed, %d failed (%.1f%% parsed)\n", col, p.Parsed, p.Failed, 100*p.Rate)
	}
	for _, col := range slices.Sorted(maps.Keys(c.Numbers)) {
		p := c.Numbers[col]
		unit := ""
		if p.Unit != "" {
			unit = " in " + p.Unit
		}
		fmt.Fprintf(w, "  numbers %s: %d converted from %s text%s, %d not numbers\n", col, p.Converted, p.Kind, unit, p.Failed)
	}
	for _, col := range slices.Sorted(maps.Keys(c.Case)) {
		f := c.Case[col]
		var spellings []string
		for _, kept := range slices.Sorted(maps.Keys(f.Spellings)) {
			spellings = append(spellings, fmt.Sprintf("%q for %q", kept, f.Spellings[kept]))
		}
		fmt.Fprintf(w, "  case %s: %d values rewritten in %d categories: %s\n", col, f.Changed, f.Groups, strings.Join(spellings, ", "))
	}
	for _, wr := range c.Warnings {
		fmt.Fprintf(w, "  warning: row %d, %s: %q %s\n", wr.Row, wr.Column, wr.Value, wr.Reason)
	}
	if more := c.WarningsTotal - len(c.Warnings); more > 0 {
		fmt.Fprintf(w, "  … %d more warnings\n", more)
	}
}
