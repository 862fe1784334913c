package linux

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// rateLogEvery is how often, at most, a rateLog writes a line after its
// first.
const rateLogEvery = 30 * time.Second

// rateLog logs an event that may repeat fast, such as a pool's build that
// keeps failing: the first occurrence at once, then at most one line per
// every, each saying how many occurrences it left out since the line
// before (suppressed). A loop that fails without end so costs the log
// one line per every, and the counts in /metrics say how often it failed.
type rateLog struct {
	log   *slog.Logger
	level slog.Level
	msg   string
	every time.Duration

	mu         sync.Mutex
	last       time.Time // when the last line was written; zero before the first
	suppressed int
}

// newRateLog returns a rateLog writing msg at level to log.
func newRateLog(log *slog.Logger, level slog.Level, msg string) *rateLog {
	return &rateLog{log: log, level: level, msg: msg, every: rateLogEvery}
}

// add records one occurrence, described by attrs (slog's key-value
// pairs), and writes it unless a line was written less than every ago.
func (l *rateLog) add(attrs ...any) {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	l.log.Log(context.Background(), l.level, l.msg, append(attrs, slog.Int("suppressed", n))...)
}
