package analyst

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// BenchmarkFollowUpOverhead measures a follow-up question's platform
// overhead: everything but the model's time, the model being a scripted
// local server (no model can run here; see scripted_test.go) that
// answers at once. Each iteration asks a follow-up in an analysis of
// DABench's insurance.csv (data loaded, helpers defined, earlier
// questions in the history) whose code is one cell; the baseline is the
// same code run directly as a cell of the same session. It reports the
// medians of both and the overhead, their difference (target: at most
// 20 ms), and their ratio.
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
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("Exec: %v, %s", err, res.Status)
		}
		return d
	}
	for range 3 { // the first question defines the helpers; a history builds up
		ask()
		cell()
	}
	var asks, cells []time.Duration
	b.ResetTimer()
	for b.Loop() {
		asks = append(asks, ask())
		cells = append(cells, cell())
	}
	b.StopTimer()
	askMed, cellMed := median(asks), median(cells)
	b.ReportMetric(float64(askMed.Microseconds())/1000, "ask-ms")
	b.ReportMetric(float64(cellMed.Microseconds())/1000, "cell-ms")
	b.ReportMetric(float64((askMed-cellMed).Microseconds())/1000, "overhead-ms")
	b.ReportMetric(float64(askMed)/float64(cellMed), "x-cell")
}

// median is the median of ds.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
