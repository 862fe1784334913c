package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// throughputClients is how many clients send runs at once: enough to keep
// every node's slots busy (a node runs twice its CPUs at once by default).
const throughputClients = 8

// BenchmarkClusterThroughput measures stateless runs of a one-line Python
// program per second through one node against the same runs spread over
// three, the nodes each in a network namespace of its own (netnsCluster),
// on one machine (target: three nodes within 10% of one; there is no
// more CPU to gain on the same machine: this measures the cluster's
// overhead, not its scaling). Each iteration is a round of 50 runs
// through one node then 50 spread over three, throughputClients clients
// each, so that both see the same load of the machine; -benchtime 12x
// gives 600 runs to each.
//
//	go test -tags crucible_initexe -run '^$' -bench BenchmarkClusterThroughput -benchtime 12x ./e2e/
func BenchmarkClusterThroughput(b *testing.B) {
	c, keys := newNetnsCluster(b, 3, []string{"bench"}, "--image", "host")
	key := keys["bench"]
	one := []string{c.Nodes[0].URL}
	three := []string{c.Nodes[0].URL, c.Nodes[1].URL, c.Nodes[2].URL}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: throughputClients}}
	var seq atomic.Int64
	runs := func(urls []string, n int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range throughputClients {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
					code := fmt.Sprintf(`{"language":"python","code":"print(%d)"}`, seq.Add(1))
					if r := call(hc, urls[i%int64(len(urls))], key, "POST", "/v1/runs", code); r.Status != http.StatusOK {
						b.Errorf("a run: %d %s (%v)", r.Status, clip(r.Body), r.Err)
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	runs(three, 30) // warm every node's pools and connections
	runs(one, 30)

	const round = 50 // runs of each kind per iteration
	var tOne, tThree time.Duration
	total := 0
	for b.Loop() {
		tOne += runs(one, round)
		tThree += runs(three, round)
		total += round
	}
	perSec := func(d time.Duration) float64 { return float64(total) / d.Seconds() }
	ratio := perSec(tThree) / perSec(tOne)
	b.ReportMetric(perSec(tOne), "one-node-runs/s")
	b.ReportMetric(perSec(tThree), "three-node-runs/s")
	b.ReportMetric(ratio, "ratio")
	fmt.Printf("%d runs each at %d clients: one node %.1f runs/s, three nodes %.1f runs/s: ratio %.3f (target: 0.90 or more)\n",
		total, throughputClients, perSec(tOne), perSec(tThree), ratio)
}
