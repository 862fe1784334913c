package analyst

import (
	"context"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// BenchmarkFollowUpOverhead measures a follow-up question's platform
// overhead: everything but the model's time, the model being a scripted
// local server (no model can run here; see scripted_test.go) that
// answers at once. Each iteration asks a follow-up in an analysis of
// DABench's insurance.csv (data loaded, helpers defined, earlier
// questions in the history) whose code is one cell; the baseline is the
// same code run directly as a cell of the same session. The two are
// timed in separate phases (package benchtest), b.N each: the questions
// (the benchmark's loop), then the cells; every answer and cell must give
// 30.66. It reports the medians of both and the overhead, their
// difference (target: at most 20 ms), and their ratio.
func BenchmarkFollowUpOverhead(b *testing.B) {
	a := openAnalysis(b, newRuntime(b), dabenchDataset(b, "insurance.csv"))
	m := newScriptedModel(b)
	model := m.provider()
	ctx := context.Background()
	const code = "print(round(df['bmi'].mean(), 2))"
	ask := func() time.Duration {
		m.script(run(code), finalAnswer("The mean BMI is 30.66."))
		start := time.Now()
		ans, err := a.Ask(ctx, "And the mean BMI?", AskOptions{Model: model})
		d := time.Since(start)
		if err != nil || !ans.Answered() || ans.Output != "30.66\n" {
			b.Fatalf("Ask: %v, %+v", err, ans)
		}
		return d
	}
	cell := func() time.Duration {
		start := time.Now()
		res, err := a.Session.Exec(ctx, sandbox.Cell{Code: code})
		d := time.Since(start)
		if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "30.66\n" {
			b.Fatalf("Exec: %v, %s, stdout %q", err, res.Status, res.Stdout)
		}
		return d
	}
	for range 3 { // the first question defines the helpers; a history builds up
		ask()
		cell()
	}
	asks := bt.Loop(b, nil, ask)
	cells := bt.Times(b.N, nil, cell)
	askMed, cellMed := asks.P50(), cells.P50()
	b.ReportMetric(float64(askMed.Microseconds())/1000, "ask-ms")
	b.ReportMetric(float64(cellMed.Microseconds())/1000, "cell-ms")
	b.ReportMetric(float64((askMed-cellMed).Microseconds())/1000, "overhead-ms")
	b.ReportMetric(float64(askMed)/float64(cellMed), "x-cell")
}
