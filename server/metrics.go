package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, in a registry of its own so
// that several servers can live in one process.
type metrics struct {
	reg         *prometheus.Registry
	runs        *prometheus.CounterVec
	duration    prometheus.Histogram
	queueDepth  prometheus.Gauge
	cacheHits   prometheus.Counter
	cacheMisses prometheus.Counter
}

// newMetrics registers the metrics; activeSessions is read at each scrape.
func newMetrics(activeSessions func() float64) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runs_total",
			Help: "Runs executed in a sandbox, by final status and language (cache hits are not counted).",
		}, []string{"status", "language"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "run_duration_seconds",
			Help:    "Time from a run's start in a sandbox to its result, queueing excluded.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14), // 10ms .. ~80s
		}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queue_depth",
			Help: "Admitted runs waiting for an execution slot.",
		}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cache_hits_total",
			Help: "Runs answered from the result cache.",
		}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cache_misses_total",
			Help: "Cache lookups that found no result.",
		}),
	}
	m.reg.MustRegister(m.runs, m.duration, m.queueDepth, m.cacheHits, m.cacheMisses,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "active_sessions",
			Help: "Sessions open in the runtime.",
		}, activeSessions),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}
