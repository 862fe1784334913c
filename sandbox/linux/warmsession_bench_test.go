package linux_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// csv1MB is a CSV of about 1 MB: numbers, text and dates, as a dataset.
func csv1MB() []byte {
	var b strings.Builder
	b.WriteString("id,city,amount,ratio,day\n")
	cities := []string{"Lisbon", "Osaka", "Quito", "Tromsø", "Lagos"}
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "%d,%s,%d,%.4f,2024-%02d-%02d\n", i, cities[i%len(cities)], i*37%10007, float64(i%997)/997, 1+i%12, 1+i%28)
	}
	return []byte(b.String())
}

// BenchmarkWarmSessionCSV measures an analysis's start: a session from
// the warm pool of the data-science image (NewSession with a 1 MB CSV
// placed read-only, then a cell that reads it with pandas and prints its
// shape) against a cold `python3 -c "import pandas;
// pandas.read_csv(...)"`: here a run of that program in a sandbox of the
// same image built for it (no pool, no warm interpreter), the CSV as its
// input file. Two phases (package benchtest), b.N each: warm (the
// benchmark's loop), each session after an untimed wait for the pool to
// be full again and closed untimed; then cold, back to back, once the pool
// is full. It reports each phase's p50 and p99 and x_cold, the ratio of
// the medians (target: at most 0.3).
func BenchmarkWarmSessionCSV(b *testing.B) {
	img := testenv.Image(b, "datascience")
	data := csv1MB()
	coldOpts := imageOptions(img)
	warmOpts := imageOptions(img)
	warmOpts.WarmSessions = 1
	cold, warm := newRuntime(b, coldOpts), newRuntime(b, warmOpts)
	files := []sandbox.File{{Name: "data/x.csv", Content: data, ReadOnly: true}}
	bare := sandbox.Request{Language: sandbox.Python, Files: files, Code: "import pandas; print(pandas.read_csv('data/x.csv').shape)",
		Limits: sandbox.Limits{WallTimeMS: 60_000, CPUTimeMS: 60_000, MemoryBytes: sandbox.GiB}}
	sreq := sandbox.SessionRequest{Language: sandbox.Python, Files: files,
		Limits: sandbox.Limits{WallTimeMS: 60_000, CPUTimeMS: 60_000, MemoryBytes: sandbox.GiB, DiskBytes: int64(len(data)) + sandbox.DefaultLimits().DiskBytes}}
	const cell = "import pandas as pd\ndf = pd.read_csv('data/x.csv')\nprint(df.shape)"
	want := fmt.Sprintf("(%d, 5)\n", strings.Count(string(data), "\n")-1)
	ctx := context.Background()
	runCold := func() time.Duration {
		t0 := time.Now()
		res, err := cold.Run(ctx, bare)
		took := time.Since(t0)
		if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != want {
			b.Fatalf("cold run: %v %s, want stdout %q", err, describe(res), want)
		}
		return took
	}
	runCold() // untimed: the page cache
	before := warm.WarmSessionStats()
	warmRuns := bt.Loop(b, func() { bt.AwaitPools(b, warm) }, func() time.Duration {
		t0 := time.Now()
		s, err := warm.NewSession(ctx, sreq)
		if err != nil {
			b.Fatalf("NewSession: %v", err)
		}
		res, err := s.Exec(ctx, sandbox.Cell{Code: cell})
		took := time.Since(t0)
		s.Close()
		if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != want {
			b.Fatalf("cell: %v %s, want stdout %q", err, describe(res), want)
		}
		return took
	})
	if st := warm.WarmSessionStats(); st.Hits-before.Hits != uint64(b.N) {
		b.Fatalf("%d of %d sessions were served warm: %+v", st.Hits-before.Hits, b.N, st)
	}
	bt.AwaitPools(b, warm)
	coldRuns := bt.Times(b.N, nil, runCold)
	bt.Compare(b, warmRuns, "warm", coldRuns, "cold", "x_cold")
}
