package service

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestPoolMetrics checks that /metrics carries what the runtime's pools
// report of their background work: failed builds, errors after use, and
// the sandboxes retired, by reason.
func TestPoolMetrics(t *testing.T) {
	m := newMetrics(func() float64 { return 0 }, func() map[string]PoolStats {
		return map[string]PoolStats{
			"warm":     {Size: 2, Ready: 1, Hits: 3, BuildFailures: 4, RecycleErrors: 5, Retired: map[string]uint64{"process_left": 6, "max_runs": 7}},
			"prestart": {Size: 1},
		}
	})
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`crucible_pool_build_failures_total{pool="warm"} 4`,
		`crucible_pool_recycle_errors_total{pool="warm"} 5`,
		`crucible_pool_retired_total{pool="warm",reason="process_left"} 6`,
		`crucible_pool_retired_total{pool="warm",reason="max_runs"} 7`,
		`crucible_pool_build_failures_total{pool="prestart"} 0`,
		`crucible_pool_hits_total{pool="warm"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `crucible_pool_retired_total{pool="prestart"`) {
		t.Error("/metrics reports retirements of a pool that retired nothing")
	}
}
