package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// csvOfSize returns a CSV of about n bytes: an id, a number, a price, a
// category and a date per row, as a sales table has.
func csvOfSize(n int) []byte {
	var b bytes.Buffer
	b.WriteString("id,quantity,price,region,day\n")
	regions := []string{"north", "south", "east", "west"}
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d,%d,%d.%02d,%s,2024-%02d-%02d\n", i, i%97, i%1000, i%100, regions[i%4], 1+i%12, 1+i%28)
	}
	return b.Bytes()
}

// BenchmarkAnalysisCreate measures creating an analysis from a 1 MB CSV
// through the API (POST /v1/analyses, a multipart upload, to the 201 with
// its profile; the analysis deleted untimed), on a runtime keeping one
// warm session (linux.Options.WarmSessions; the benchmark waits, untimed,
// for it to be ready), against a bare cold `import pandas;
// pandas.read_csv(...)` run in a fresh sandbox of the same image on a
// runtime without pools, alternating the two. It reports their medians,
// the ratio of the analysis's time over the bare read (target ≤ 0.3),
// and the warm pool's hits.
func BenchmarkAnalysisCreate(b *testing.B) {
	testenv.Root(b)
	img := testenv.Image(b, "datascience")
	opts := linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest}
	cold, err := linux.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer cold.Close()
	opts.WarmSessions = 1
	rt, err := linux.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	cfg := config{}
	cfg.Runtime = rt
	srv, _ := newServer(b, cfg)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	data := csvOfSize(1 << 20)
	ctx := context.Background()

	create := func() time.Duration {
		body, contentType := form(b, [3]string{"datasets", "sales.csv", string(data)})
		for st := rt.WarmSessionStats(); st.Ready < st.Size; st = rt.WarmSessionStats() {
			time.Sleep(10 * time.Millisecond)
		}
		start := time.Now()
		resp, err := http.Post(hs.URL+"/v1/analyses", contentType, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != http.StatusCreated || !strings.Contains(out.String(), `"profile"`) {
			b.Fatalf("POST /v1/analyses: %d %s", resp.StatusCode, out.String())
		}
		loc := resp.Header.Get("Location")
		req, _ := http.NewRequest("DELETE", hs.URL+loc, nil)
		if r, err := http.DefaultClient.Do(req); err == nil {
			r.Body.Close()
		}
		return took
	}
	bare := func() time.Duration {
		start := time.Now()
		res, err := cold.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: "import pandas; pandas.read_csv('sales.csv')",
			Files: []sandbox.File{{Name: "sales.csv", Content: data}}})
		took := time.Since(start)
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("bare read_csv: %v %s %s", err, res.Status, res.Stderr)
		}
		return took
	}
	var api, base []time.Duration
	b.ResetTimer()
	for range b.N {
		api = append(api, create())
		base = append(base, bare())
	}
	b.StopTimer()
	a, r := median(api), median(base)
	b.ReportMetric(float64(a.Microseconds())/1000, "create_ms_p50")
	b.ReportMetric(float64(r.Microseconds())/1000, "bare_read_csv_ms_p50")
	b.ReportMetric(float64(a)/float64(r), "ratio")
	b.ReportMetric(float64(rt.WarmSessionStats().Hits), "warm_hits")
}
