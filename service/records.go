package service

import (
	"context"
	"sync/atomic"

	"github.com/crucible-sandbox/crucible/api"
)

// recordWrites applies one run's record writes in order, each on a
// goroutine that waits for the previous one, so that the run need not wait
// for the store: the record's creation and its "running" mark overlap the
// sandbox's work. Each write gets a copy of the record, so the run may go
// on changing its own. Without a store it writes nothing.
type recordWrites struct {
	s      *Service
	last   chan struct{} // closed when the latest write is done
	failed atomic.Bool   // the record could not be created (logged)
}

func (w *recordWrites) create(rec api.Run) {
	w.then("create run record", rec.ID, true, func(ctx context.Context) error { return w.s.cfg.Store.Create(ctx, &rec) })
}

func (w *recordWrites) update(rec api.Run) {
	w.then("mark run running", rec.ID, false, func(ctx context.Context) error { return w.s.cfg.Store.Update(ctx, &rec) })
}

// then queues write; if it fails, the failure is logged and, when fatal,
// the writes after it are skipped.
func (w *recordWrites) then(what, id string, fatal bool, write func(context.Context) error) {
	if w.s.cfg.Store == nil {
		return
	}
	prev, done := w.last, make(chan struct{})
	w.last = done
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		if w.failed.Load() {
			return // the record does not exist
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if err := write(ctx); err != nil {
			w.s.log.Error(what, "run", id, "err", err)
			w.failed.Store(fatal)
		}
	}()
}

// wait blocks until every write is done and reports whether the record
// exists.
func (w *recordWrites) wait() bool {
	if w.last != nil {
		<-w.last
	}
	return !w.failed.Load()
}
