package service

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// eventsPollInterval is how often Events rereads the record of a run it
// has no feed of.
const eventsPollInterval = 200 * time.Millisecond

// Follow passes tenant's run id's events to emit until the run ends, ctx
// ends or emit returns false: Events from the first.
func (s *Service) Follow(ctx context.Context, tenant, id string, emit func(Event) bool) error {
	events, err := s.Events(ctx, tenant, id, 0)
	if err != nil || events == nil {
		return err
	}
	for e := range events {
		if !emit(e) {
			break
		}
	}
	return nil
}

// Events returns the events of tenant's run id after position after (an
// Event.ID; 0 for all of them), until the run ends or ctx ends. A run
// started with Start is followed live from its feed, whatever after is;
// a position beyond the feed's last event so far is an input error naming
// "after". Any other run, such as one that ended, is followed by reading
// its record until it ends, then replayed from it: EventRun (ID 1), its
// stdout and stderr in one event each, and EventResult, with the IDs the
// feed gave them had they been written in that order, so that the
// result's ID is the same. As the record does not keep how the two
// streams were interleaved, a position past the run event of a run with
// output on both streams gets the result only (its stdout and stderr are
// the whole output); with output on one stream only, the rest of it comes
// before the result. Events returns a nil sequence when the run ended and
// nothing comes after position after.
func (s *Service) Events(ctx context.Context, tenant, id string, after int64) (iter.Seq[Event], error) {
	if after < 0 {
		return nil, invalid("after", "must be a non-negative integer, got %d", after)
	}
	// The feed first: a waiting run's record may not be written yet.
	if f, ok := s.feeds.get(tenant, id); ok {
		switch last, done := f.position(); {
		case done && after >= last:
			return nil, nil
		case after > last:
			return nil, invalid("after", "is beyond the last event of run %s so far (%d): it must be the id of an event of its stream", id, last)
		}
		return func(yield func(Event) bool) { f.follow(ctx, after, yield) }, nil
	}
	rec, err := s.Get(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if rec.FinishedAt != nil {
		events := replay(responseOf(rec), after)
		if len(events) == 0 {
			return nil, nil
		}
		return slices.Values(events), nil
	}
	return func(yield func(Event) bool) {
		for rec.FinishedAt == nil { // a run without a feed: poll its record
			select {
			case <-ctx.Done():
				return
			case <-time.After(eventsPollInterval):
			}
			if rec, err = s.Get(ctx, tenant, id); err != nil {
				s.log.Error("follow run", "run", id, "err", err)
				return
			}
		}
		for _, e := range replay(responseOf(rec), after) {
			if !yield(e) {
				return
			}
		}
	}, nil
}

// responseOf is the answer of a finished run, from its record.
func responseOf(rec *api.Run) api.RunResponse {
	return api.RunResponse{ID: rec.ID, CacheHit: rec.CacheHit, Image: rec.Image, Result: resultOf(rec)}
}

// replay returns a finished run's events after position after, as Events
// describes.
func replay(resp api.RunResponse, after int64) []Event {
	stdout, stderr := int64(len(resp.Stdout)), int64(len(resp.Stderr))
	events := []Event{{ID: 1, Kind: EventRun, Run: &api.RunAccepted{ID: resp.ID, Status: resp.Status}}}
	if stdout > 0 {
		events = append(events, Event{ID: 1 + stdout, Kind: EventStdout, Output: resp.Stdout})
	}
	if stderr > 0 {
		events = append(events, Event{ID: 1 + stdout + stderr, Kind: EventStderr, Output: resp.Stderr})
	}
	end := Event{ID: 2 + stdout + stderr, Kind: EventResult, Result: &resp}
	if after > 1 && stdout > 0 && stderr > 0 {
		// Which of the output before after the follower has is not known.
		if after >= end.ID {
			return nil
		}
		return []Event{end}
	}
	return since(append(events, end), after)
}
