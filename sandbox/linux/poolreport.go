package linux

import (
	"errors"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// What a pool reports of its work in the background, where no caller
// sees an error: builds that failed, sandboxes retired and why, errors
// destroying or giving back a sandbox after use. Each is counted (for
// PoolStats, and so /metrics) and logged, rate-limited (rateLog).

// Why a pool's sandbox was retired: the reason label of PoolStats.RetiredBy.
const (
	// retiredProcessLeft: processes of the run were left after it ended.
	retiredProcessLeft = "process_left"
	// retiredOOM: the run was killed for memory.
	retiredOOM = "oom"
	// retiredZygoteChanged: the zygote's scheduling changed during a run.
	retiredZygoteChanged = "zygote_changed"
	// retiredResetFailed: the slot's reset failed (init found something
	// it could not undo, or did not answer), or its limits could not be
	// set back.
	retiredResetFailed = "reset_failed"
	// retiredForkFailed: the fork for the slot's next run failed.
	retiredForkFailed = "fork_failed"
	// retiredMaxRuns and retiredMaxAge: the slot served zygoteMaxRuns
	// runs, or zygoteMaxAge; the end of its service, not an anomaly.
	retiredMaxRuns = "max_runs"
	retiredMaxAge  = "max_age"
	// retiredLimits: a run's limits could not be applied to a ready
	// single-run warm sandbox (Options.SingleRunWarm), which the run
	// then did not take.
	retiredLimits = "limits"
	// retiredDead: a ready sandbox had died before it was taken.
	retiredDead = "dead"
	// retiredError: a platform error during the run.
	retiredError = "error"
)

// retirement is an error that retires a sandbox, with its reason.
type retirement struct {
	reason string
	err    error
}

func (r *retirement) Error() string { return r.err.Error() }
func (r *retirement) Unwrap() error { return r.err }

// retireFor returns err (not nil) as the cause of a retirement for reason.
func retireFor(reason string, err error) error { return &retirement{reason: reason, err: err} }

// retireReason returns the reason err (not nil) retires a sandbox for:
// retireFor's, or retiredError for any other error.
func retireReason(err error) string {
	if r := (*retirement)(nil); errors.As(err, &r) {
		return r.reason
	}
	return retiredError
}

// poolReport is what a pool counts and logs of its background work.
type poolReport struct {
	log           *slog.Logger
	buildFailures atomic.Uint64
	recycleErrors atomic.Uint64
	buildLog      *rateLog
	recycleLog    *rateLog

	mu         sync.Mutex
	retiredBy  map[string]uint64
	retireLogs map[string]*rateLog // by reason
}

// newPoolReport returns the report of the pool called name, logging to
// log (nil: slog.Default()).
func newPoolReport(name string, log *slog.Logger) *poolReport {
	if log == nil {
		log = slog.Default()
	}
	log = log.With(slog.String("pool", name))
	return &poolReport{
		log:        log,
		buildLog:   newRateLog(log, slog.LevelError, "sandbox pool: a build failed; retrying after a backoff"),
		recycleLog: newRateLog(log, slog.LevelWarn, "sandbox pool: destroying or giving back a sandbox after use failed"),
		retiredBy:  map[string]uint64{},
		retireLogs: map[string]*rateLog{},
	}
}

// buildFailed counts and logs a failed build, the consecutive-th in a row,
// to be retried after retry.
func (r *poolReport) buildFailed(err error, consecutive int, retry time.Duration) {
	r.buildFailures.Add(1)
	r.buildLog.add(slog.Any("err", err), slog.Int("consecutive", consecutive), slog.Duration("retry_in", retry))
}

// recycleFailed counts and logs err, if not nil: an error destroying or
// giving back a sandbox after use.
func (r *poolReport) recycleFailed(err error) {
	if err == nil {
		return
	}
	r.recycleErrors.Add(1)
	r.recycleLog.add(slog.Any("err", err))
}

// retired counts a sandbox retired because of why (not nil) and logs it
// but for the end of a slot's service, which is no anomaly.
func (r *poolReport) retired(why error) {
	reason := retireReason(why)
	r.mu.Lock()
	r.retiredBy[reason]++
	l := r.retireLogs[reason]
	if l == nil {
		l = newRateLog(r.log, slog.LevelWarn, "sandbox pool: a sandbox was retired")
		r.retireLogs[reason] = l
	}
	r.mu.Unlock()
	if reason == retiredMaxRuns || reason == retiredMaxAge {
		return
	}
	l.add(slog.String("reason", reason), slog.Any("err", why))
}

// fill sets st's counts from r.
func (r *poolReport) fill(st *PoolStats) {
	st.BuildFailures, st.RecycleErrors = r.buildFailures.Load(), r.recycleErrors.Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.retiredBy {
		st.Retired += n
	}
	if len(r.retiredBy) > 0 {
		st.RetiredBy = maps.Clone(r.retiredBy)
	}
}
