package analyst

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// bigCSV returns about size bytes of CSV with mixed columns: integers,
// floats, a low-cardinality text column, a high-cardinality one, dates
// written as text and a flag; with an id column first (a key: no two
// rows alike) if id is set.
func bigCSV(size int, id bool) []byte {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	r := rand.New(rand.NewPCG(1, 2))
	cats := []string{"north", "south", "east", "west", "centre"}
	if id {
		fmt.Fprint(w, "id,")
	}
	fmt.Fprintln(w, "price,qty,region,customer,date,returned")
	for i := 0; buf.Len()+w.Buffered() < size; i++ {
		if id {
			fmt.Fprintf(w, "%d,", i)
		}
		day := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(1500))
		fmt.Fprintf(w, "%.2f,%d,%s,cust%06d,%s,%v\n", r.Float64()*1000, r.IntN(50), cats[r.IntN(len(cats))],
			r.IntN(200_000), day.Format("2006-01-02"), r.IntN(10) == 0)
	}
	w.Flush()
	return buf.Bytes()
}

// BenchmarkProfile50MB measures the profile of a 50 MB CSV (the loader
// and profiler cell) against bare pandas.read_csv followed by
// describe(include="all") on the same file, each in a session of the
// data-science image with pandas already imported, in separate phases
// (package benchtest), b.N cells each: the profile (the benchmark's
// loop), then the baseline. It reports the medians and their ratio
// (target: at most 1.5). Every cell must end ok; the profile's must print
// its JSON, one table of the file's every row. The file comes with an id column, which
// tells the profiler at once that no row repeats another, and without
// one, which makes it key every row over every column.
func BenchmarkProfile50MB(b *testing.B) {
	rt := newRuntime(b)
	for _, bc := range []struct {
		name string
		id   bool
	}{{"id column", true}, {"no id column", false}} {
		b.Run(bc.name, func(b *testing.B) { benchmarkProfile(b, rt, bigCSV(50<<20, bc.id)) })
	}
}

// benchmarkProfile is BenchmarkProfile50MB over one file, read as
// data/big.csv.
func benchmarkProfile(b *testing.B, rt sandbox.SessionRuntime, content []byte) {
	ctx := context.Background()
	data := []Dataset{{Name: "big.csv", Content: content}}
	frames, err := Frames(data)
	if err != nil {
		b.Fatal(err)
	}
	req := sandbox.SessionRequest{Language: sandbox.Python, Files: datasetFiles(data), Limits: SessionLimits(sandbox.Limits{}, data, sandbox.MaxLimits())}
	newSession := func() sandbox.Session {
		s, err := rt.NewSession(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		if res, err := s.Exec(ctx, sandbox.Cell{Code: "import pandas, numpy"}); err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("import pandas: %v %s", err, res.Stderr)
		}
		return s
	}
	prof, bare := newSession(), newSession()
	code, err := profileCell(frames)
	if err != nil {
		b.Fatal(err)
	}
	rows := bytes.Count(content, []byte("\n")) - 1
	timed := func(s sandbox.Session, code string, check func(sandbox.Result) error) time.Duration {
		start := time.Now()
		res, err := s.Exec(ctx, sandbox.Cell{Code: code})
		took := time.Since(start)
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("cell: %v %s %s", err, res.Status, res.Stderr)
		}
		if err := check(res); err != nil {
			b.Fatal(err)
		}
		return took
	}
	profiled := func(res sandbox.Result) error {
		p, err := decodeProfile(res.Stdout, frames)
		if err != nil {
			return err
		}
		if p.Tables[0].Rows != rows {
			return fmt.Errorf("the profile has %d rows, want %d", p.Tables[0].Rows, rows)
		}
		return nil
	}
	const baseline = `d = pandas.read_csv("data/big.csv"); d.describe(include="all"); print(len(d))`
	counted := func(res sandbox.Result) error {
		if want := fmt.Sprintf("%d\n", rows); string(res.Stdout) != want {
			return fmt.Errorf("baseline: stdout %q, want %q", res.Stdout, want)
		}
		return nil
	}
	tp := bt.Loop(b, nil, func() time.Duration { return timed(prof, code, profiled) })
	tb := bt.Times(b.N, nil, func() time.Duration { return timed(bare, baseline, counted) })
	b.ReportMetric(tp.P50().Seconds(), "profile-s/op")
	b.ReportMetric(tb.P50().Seconds(), "baseline-s/op")
	b.ReportMetric(bt.Ratio(tp, tb), "ratio")
}
