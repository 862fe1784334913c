package linux

import (
	"context"
	"log/slog"
)

// oneShotPool keeps pristine sandboxes, each serving one request and then
// destroyed (Options.Prestart, Options.SingleRunWarm): its replacement is
// asked for when the request ends.
type oneShotPool[S pooled] struct{ *readyPool[S] }

// newOneShotPool begins keeping size sandboxes made by build ready, as the
// pool called name (see newPool).
func newOneShotPool[S pooled](name string, size int, build func() (S, error), log *slog.Logger) oneShotPool[S] {
	return oneShotPool[S]{newPool(name, size, build, nil, log)}
}

// take returns a ready sandbox, or false at once if none is ready.
func (pool oneShotPool[S]) take(context.Context) (S, bool) { return pool.takeReady() }

// put destroys s, whose request has ended (or that was retired because
// of why, if not nil), and asks for its replacement.
func (pool oneShotPool[S]) put(s S, why error) error {
	if why != nil {
		pool.report.retired(why)
	}
	return pool.replace(s)
}

// detachPool keeps sandboxes whose request outlives a run by far, a warm
// session's (Options.WarmSessions): the replacement of one taken is asked
// for at once, and a sandbox put is only destroyed.
type detachPool[S pooled] struct{ *readyPool[S] }

// newDetachPool begins keeping size sandboxes made by build ready, as the
// pool called name (see newPool). Each build waits until gate, if not
// nil, allows it.
func newDetachPool[S pooled](name string, size int, build func() (S, error), gate func() <-chan struct{}, log *slog.Logger) detachPool[S] {
	return detachPool[S]{newPool(name, size, build, gate, log)}
}

// take returns a ready sandbox, or false at once if none is ready; a
// sandbox taken is replaced now.
func (pool detachPool[S]) take(context.Context) (S, bool) {
	s, ok := pool.takeReady()
	if ok {
		pool.detach()
	}
	return s, ok
}

// put destroys s, whose session has ended (or that was retired because of
// why, if not nil); it was replaced when taken.
func (pool detachPool[S]) put(s S, why error) error {
	if why != nil {
		pool.report.retired(why)
	}
	return s.release()
}
