package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
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
// warm session (linux.Options.WarmSessions), against a bare cold `import
// pandas; pandas.read_csv(...)` run in a fresh sandbox of the same image
// on a runtime without pools. Two phases (package benchtest), b.N each:
// create (the benchmark's loop), each after an untimed wait for the warm
// session to be ready; then bare, back to back, once it is. Every answer
// is decoded: the analysis's profile must have read the CSV's every row,
// and the bare run must end ok printing them. It reports the phases' p50
// and p99, ratio, of the medians (target ≤ 0.3), and the warm pool's
// hits.
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
	rows := bytes.Count(data, []byte("\n")) - 1
	ctx := context.Background()

	create := func() time.Duration {
		body, contentType := form(b, [3]string{"datasets", "sales.csv", string(data)})
		start := time.Now()
		resp, err := http.Post(hs.URL+"/v1/analyses", contentType, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var out api.Analysis
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != http.StatusCreated || err != nil {
			b.Fatalf("POST /v1/analyses: HTTP %d, %v", resp.StatusCode, err)
		}
		var prof struct {
			Tables []struct {
				Rows  int    `json:"rows"`
				Error string `json:"error"`
			} `json:"tables"`
		}
		if err := json.Unmarshal(out.Profile, &prof); err != nil || len(prof.Tables) != 1 || prof.Tables[0].Rows != rows {
			b.Fatalf("POST /v1/analyses: profile %s (%v), want one table of %d rows", out.Profile, err, rows)
		}
		req, _ := http.NewRequest("DELETE", hs.URL+"/v1/analyses/"+out.ID, nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode/100 != 2 {
			b.Fatalf("DELETE /v1/analyses/%s: HTTP %d", out.ID, r.StatusCode)
		}
		return took
	}
	bare := func() time.Duration {
		start := time.Now()
		res, err := cold.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: "import pandas; print(len(pandas.read_csv('sales.csv')))",
			Files: []sandbox.File{{Name: "sales.csv", Content: data}}})
		took := time.Since(start)
		if want := fmt.Sprintf("%d\n", rows); err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != want {
			b.Fatalf("bare read_csv: %v %s %q %s, want stdout %q", err, res.Status, res.Stdout, res.Stderr, want)
		}
		return took
	}
	bare() // untimed: the page cache, the first session
	bt.AwaitPools(b, rt)
	create()
	created := bt.Loop(b, func() { bt.AwaitPools(b, rt) }, create)
	bt.AwaitPools(b, rt)
	base := bt.Times(b.N, nil, bare)
	bt.Compare(b, created, "create", base, "bare_read_csv", "ratio")
	b.ReportMetric(float64(rt.WarmSessionStats().Hits), "warm_hits")
}
