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
)

// bigCSV returns about size bytes of CSV with mixed columns: integers,
// floats, a low-cardinality text column, a high-cardinality one, dates
// written as text and a flag.
func bigCSV(size int) []byte {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	r := rand.New(rand.NewPCG(1, 2))
	cats := []string{"north", "south", "east", "west", "centre"}
	fmt.Fprintln(w, "id,price,qty,region,customer,date,returned")
	for i := 0; buf.Len()+w.Buffered() < size; i++ {
		day := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(1500))
		fmt.Fprintf(w, "%d,%.2f,%d,%s,cust%06d,%s,%v\n", i, r.Float64()*1000, r.IntN(50), cats[r.IntN(len(cats))],
			r.IntN(200_000), day.Format("2006-01-02"), r.IntN(10) == 0)
	}
	w.Flush()
	return buf.Bytes()
}

// BenchmarkProfile50MB measures the profile of a 50 MB CSV (the loader
// and profiler cell) against bare pandas.read_csv followed by
// describe(include="all") on the same file, each in a session of the
// data-science image with pandas already imported; it reports their
// ratio (target: at most 1.5).
func BenchmarkProfile50MB(b *testing.B) {
	rt := newRuntime(b)
	ctx := context.Background()
	data := []Dataset{{Name: "big.csv", Content: bigCSV(50 << 20)}}
	frames, err := Frames(data)
	if err != nil {
		b.Fatal(err)
	}
	req := sandbox.SessionRequest{Language: sandbox.Python, Files: datasetFiles(data), Limits: analysisLimits(sandbox.Limits{}, data)}
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
	timed := func(s sandbox.Session, code string) time.Duration {
		start := time.Now()
		res, err := s.Exec(ctx, sandbox.Cell{Code: code})
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("cell: %v %s %s", err, res.Status, res.Stderr)
		}
		return time.Since(start)
	}
	var tp, tb time.Duration
	b.ResetTimer()
	for range b.N {
		tp += timed(prof, code)
		tb += timed(bare, `d = pandas.read_csv("data/big.csv"); d.describe(include="all")`)
	}
	b.ReportMetric(tp.Seconds()/float64(b.N), "profile-s/op")
	b.ReportMetric(tb.Seconds()/float64(b.N), "baseline-s/op")
	b.ReportMetric(tp.Seconds()/tb.Seconds(), "ratio")
}
