package service

import (
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the service's Prometheus metrics, in a registry of its own so
// that several servers can live in one process.
type metrics struct {
	reg         *prometheus.Registry
	runs        *prometheus.CounterVec
	cells       *prometheus.CounterVec
	duration    prometheus.Histogram
	queueDepth  prometheus.Gauge
	cacheHits   prometheus.Counter
	cacheMisses prometheus.Counter
	// egressConns and egressBytes count what runs with network did
	// through the egress proxy.
	egressConns *prometheus.CounterVec
	egressBytes *prometheus.CounterVec
}

// namespace prefixes every metric of the server's own.
const namespace = "crucible"

// PoolStats describe one pool of ready sandboxes, for /metrics.
type PoolStats struct {
	// Size is how many sandboxes the pool keeps ready.
	Size int
	// Ready is how many are ready now.
	Ready int
	// Hits counts runs that took a ready sandbox; Misses those that found
	// none.
	Hits, Misses uint64
	// BuildFailures counts the pool's builds that failed (and were
	// retried); RecycleErrors the errors destroying or giving back a
	// sandbox after use.
	BuildFailures, RecycleErrors uint64
	// Retired counts the sandboxes the pool retired before the end of
	// their service, by reason (the runtime's: linux.PoolStats.RetiredBy).
	Retired map[string]uint64
}

// newMetrics registers the metrics; activeSessions and pools (if not nil)
// are read at each scrape.
func newMetrics(activeSessions func() float64, pools func() map[string]PoolStats) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "runs_total",
			Help: "Runs executed in a sandbox, by final status and language (cache hits are not counted).",
		}, []string{"status", "language"}),
		cells: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "cells_total",
			Help: "Session cells executed, by final status.",
		}, []string{"status"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "run_duration_seconds",
			Help:    "Time from a run's start in a sandbox to its result, queueing excluded.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14), // 10ms .. ~80s
		}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "queue_depth",
			Help: "Admitted runs waiting for an execution slot.",
		}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_hits_total",
			Help: "Runs answered from the result cache.",
		}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_misses_total",
			Help: "Cache lookups that found no result.",
		}),
		egressConns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "egress_connections_total",
			Help: "Connections runs with a network allowlist opened through the egress proxy, by verdict (allowed, refused, failed).",
		}, []string{"verdict"}),
		egressBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "egress_bytes_total",
			Help: "Bytes carried by the egress proxy's connections, by direction (sent by programs, received by them).",
		}, []string{"direction"}),
	}
	m.reg.MustRegister(m.runs, m.cells, m.duration, m.queueDepth, m.cacheHits, m.cacheMisses, m.egressConns, m.egressBytes,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "active_sessions",
			Help: "Sessions open in the service.",
		}, activeSessions),
		poolCollector{pools},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

var (
	poolSizeDesc = prometheus.NewDesc(namespace+"_pool_size",
		"Sandboxes the pool keeps ready.", []string{"pool"}, nil)
	poolReadyDesc = prometheus.NewDesc(namespace+"_pool_ready",
		"Sandboxes ready in the pool now.", []string{"pool"}, nil)
	poolHitsDesc = prometheus.NewDesc(namespace+"_pool_hits_total",
		"Runs (sessions, for a warm-sessions pool) that took a ready sandbox from the pool.", []string{"pool"}, nil)
	poolMissesDesc = prometheus.NewDesc(namespace+"_pool_misses_total",
		"Runs (sessions, for a warm-sessions pool) that found the pool empty and built their own sandbox.", []string{"pool"}, nil)
	poolHitRatioDesc = prometheus.NewDesc(namespace+"_pool_hit_ratio",
		"Hits over hits plus misses since start (0 before any run).", []string{"pool"}, nil)
	poolBuildFailuresDesc = prometheus.NewDesc(namespace+"_pool_build_failures_total",
		"Builds of a sandbox for the pool that failed (each is retried after a backoff).", []string{"pool"}, nil)
	poolRecycleErrorsDesc = prometheus.NewDesc(namespace+"_pool_recycle_errors_total",
		"Errors destroying or giving back a pool's sandbox after use (a run's cgroup or a sandbox not removed).", []string{"pool"}, nil)
	poolRetiredDesc = prometheus.NewDesc(namespace+"_pool_retired_total",
		"Sandboxes the pool retired before the end of their service, by reason (process_left, oom, zygote_changed, reset_failed, fork_failed, max_runs, max_age, limits, dead, error).",
		[]string{"pool", "reason"}, nil)
)

// poolCollector reports the runtime's pools at each scrape.
type poolCollector struct{ pools func() map[string]PoolStats }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolSizeDesc, poolReadyDesc, poolHitsDesc, poolMissesDesc, poolHitRatioDesc,
		poolBuildFailuresDesc, poolRecycleErrorsDesc, poolRetiredDesc} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	if c.pools == nil {
		return
	}
	for name, p := range c.pools() {
		ratio := 0.0
		if p.Hits+p.Misses > 0 {
			ratio = float64(p.Hits) / float64(p.Hits+p.Misses)
		}
		ch <- prometheus.MustNewConstMetric(poolSizeDesc, prometheus.GaugeValue, float64(p.Size), name)
		ch <- prometheus.MustNewConstMetric(poolReadyDesc, prometheus.GaugeValue, float64(p.Ready), name)
		ch <- prometheus.MustNewConstMetric(poolHitsDesc, prometheus.CounterValue, float64(p.Hits), name)
		ch <- prometheus.MustNewConstMetric(poolMissesDesc, prometheus.CounterValue, float64(p.Misses), name)
		ch <- prometheus.MustNewConstMetric(poolHitRatioDesc, prometheus.GaugeValue, ratio, name)
		ch <- prometheus.MustNewConstMetric(poolBuildFailuresDesc, prometheus.CounterValue, float64(p.BuildFailures), name)
		ch <- prometheus.MustNewConstMetric(poolRecycleErrorsDesc, prometheus.CounterValue, float64(p.RecycleErrors), name)
		for reason, n := range p.Retired {
			ch <- prometheus.MustNewConstMetric(poolRetiredDesc, prometheus.CounterValue, float64(n), name, reason)
		}
	}
}

// countNetwork adds a run's network log to the egress metrics.
func (m *metrics) countNetwork(log *sandbox.NetworkLog) {
	if log == nil {
		return
	}
	for _, c := range log.Connections {
		m.egressConns.WithLabelValues(c.Verdict).Inc()
	}
	if log.Unlisted > 0 {
		m.egressConns.WithLabelValues(sandbox.VerdictRefused).Add(float64(log.Unlisted))
	}
	m.egressBytes.WithLabelValues("sent").Add(float64(log.BytesSent))
	m.egressBytes.WithLabelValues("received").Add(float64(log.BytesReceived))
}
