package service

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// testRegistry is a registry of strings with the refusals' kinds told
// apart by their messages.
func testRegistry(max, retain int, retainFor time.Duration, remember int) *registry[string] {
	return newRegistry[string](registryConfig{max: max, retain: retain, retainFor: retainFor, remember: remember,
		notFound:   func(id string) error { return errorf(KindNotFound, "no %s", id) },
		closedErr:  func(id string) error { return errorf(KindSessionClosed, "%s closed", id) },
		tenantFull: func(t string, n, m int) error { return errorf(KindBusy, "tenant %s holds %d of %d", t, n, m) },
		full:       func() error { return errorf(KindBusy, "full") }})
}

// TestRegistry drives the one registry of sessions, agent runs and
// analyses through each rule: tenant scoping, shares, the maximum,
// reservations, ends, retention, remembered IDs, order and shutdown.
func TestRegistry(t *testing.T) {
	type step struct {
		op      string // add, reserve, release, commit, end, get, list, shutdown, active
		tenant  string
		id      string
		max     int    // the tenant's share, for add and reserve
		want    string // the error's message, the list joined, or the count
		wantErr Kind
	}
	cases := []struct {
		name                  string
		max, retain, remember int
		retainFor             time.Duration
		steps                 []step
	}{
		{name: "tenant scoping", max: 10, steps: []step{
			{op: "add", tenant: "a", id: "x", max: 5},
			{op: "get", tenant: "a", id: "x", want: "x"},
			{op: "get", tenant: "b", id: "x", wantErr: KindNotFound, want: "no x"},
			{op: "get", tenant: "a", id: "y", wantErr: KindNotFound, want: "no y"},
			{op: "list", tenant: "b", want: "[]"},
		}},
		{name: "tenant share then service maximum", max: 3, steps: []step{
			{op: "add", tenant: "a", id: "1", max: 2},
			{op: "add", tenant: "a", id: "2", max: 2},
			{op: "add", tenant: "a", id: "3", max: 2, wantErr: KindBusy, want: "tenant a holds 2 of 2"},
			{op: "add", tenant: "b", id: "3", max: 2},
			{op: "add", tenant: "b", id: "4", max: 2, wantErr: KindBusy, want: "full"},
			{op: "end", id: "1"},
			{op: "add", tenant: "b", id: "4", max: 2},
			{op: "active", want: "3"},
		}},
		{name: "reservations count until released or committed", max: 2, steps: []step{
			{op: "reserve", tenant: "a", max: 1},
			{op: "reserve", tenant: "a", max: 1, wantErr: KindBusy, want: "tenant a holds 1 of 1"},
			{op: "reserve", tenant: "b", max: 5},
			{op: "reserve", tenant: "c", max: 5, wantErr: KindBusy, want: "full"},
			{op: "release", tenant: "b"},
			{op: "commit", tenant: "a", id: "s1"},
			{op: "reserve", tenant: "a", max: 1, wantErr: KindBusy, want: "tenant a holds 1 of 1"},
			{op: "active", want: "1"},
			{op: "get", tenant: "a", id: "s1", want: "s1"},
		}},
		{name: "ended and remembered: closed, not found for others", max: 10, remember: 2, steps: []step{
			{op: "add", tenant: "a", id: "x", max: 5},
			{op: "end", id: "x"},
			{op: "end", id: "x"}, // twice: nothing more
			{op: "active", want: "0"},
			{op: "get", tenant: "a", id: "x", wantErr: KindSessionClosed, want: "x closed"},
			{op: "get", tenant: "b", id: "x", wantErr: KindNotFound, want: "no x"},
			{op: "list", tenant: "a", want: "[]"},
		}},
		{name: "remembers a bounded number of IDs", max: 10, remember: 2, steps: []step{
			{op: "add", tenant: "a", id: "1", max: 5}, {op: "end", id: "1"},
			{op: "add", tenant: "a", id: "2", max: 5}, {op: "end", id: "2"},
			{op: "add", tenant: "a", id: "3", max: 5}, {op: "end", id: "3"},
			{op: "get", tenant: "a", id: "1", wantErr: KindNotFound, want: "no 1"},
			{op: "get", tenant: "a", id: "2", wantErr: KindSessionClosed, want: "2 closed"},
		}},
		{name: "retains the last ended, found and listed", max: 10, retain: 2, retainFor: time.Hour, steps: []step{
			{op: "add", tenant: "a", id: "1", max: 5}, {op: "end", id: "1"},
			{op: "add", tenant: "a", id: "2", max: 5}, {op: "end", id: "2"},
			{op: "add", tenant: "a", id: "3", max: 5},
			{op: "get", tenant: "a", id: "1", want: "1"},
			{op: "list", tenant: "a", want: "[3 2 1]"},
			{op: "end", id: "3"},
			{op: "get", tenant: "a", id: "1", wantErr: KindNotFound, want: "no 1"},
			{op: "list", tenant: "a", want: "[3 2]"},
		}},
		{name: "retains for a time only", max: 10, retain: 5, retainFor: time.Nanosecond, steps: []step{
			{op: "add", tenant: "a", id: "1", max: 5}, {op: "end", id: "1"},
			{op: "sleep"},
			{op: "get", tenant: "a", id: "1", wantErr: KindNotFound, want: "no 1"},
		}},
		{name: "lists newest first", max: 10, steps: []step{
			{op: "add", tenant: "a", id: "b", max: 5},
			{op: "add", tenant: "a", id: "c", max: 5},
			{op: "add", tenant: "b", id: "z", max: 5},
			{op: "add", tenant: "a", id: "a", max: 5},
			{op: "list", tenant: "a", want: "[a c b]"},
		}},
		{name: "shutdown refuses and drains", max: 10, steps: []step{
			{op: "add", tenant: "a", id: "1", max: 5},
			{op: "shutdown", want: "[1] draining"},
			{op: "add", tenant: "a", id: "2", max: 5, wantErr: KindUnavailable},
			{op: "end", id: "1"},
			{op: "shutdown", want: "[] drained"},
		}},
		{name: "no maximum", steps: []step{
			{op: "add", tenant: "a", id: "1", max: 5},
			{op: "add", tenant: "a", id: "2", max: 5},
			{op: "active", want: "2"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := testRegistry(c.max, c.retain, c.retainFor, c.remember)
			var drained <-chan struct{}
			for i, s := range c.steps {
				var err error
				got := ""
				switch s.op {
				case "add":
					err = r.add(s.tenant, s.id, s.id, s.max)
				case "reserve":
					err = r.reserve(s.tenant, s.max)
				case "release":
					r.release(s.tenant)
				case "commit":
					r.commit(s.tenant, s.id, s.id)
				case "end":
					r.end(s.id)
					if drained != nil {
						select {
						case <-drained:
						case <-time.After(5 * time.Second):
							t.Fatalf("step %d: not drained after the last end", i)
						}
					}
				case "get":
					got, err = r.get(s.tenant, s.id)
				case "list":
					got = fmt.Sprint(r.list(s.tenant))
				case "active":
					got = fmt.Sprint(r.active())
				case "sleep":
					time.Sleep(time.Millisecond)
				case "shutdown":
					var live []string
					live, drained = r.shutdown()
					state := "draining"
					select {
					case <-drained:
						state = "drained"
					default:
					}
					got = fmt.Sprint(live) + " " + state
				default:
					t.Fatalf("step %d: no op %q", i, s.op)
				}
				if s.wantErr != 0 {
					var e *Error
					if !errors.As(err, &e) || e.Kind != s.wantErr || (s.want != "" && e.Message != s.want) {
						t.Fatalf("step %d %s %s: error %v, want kind %d %q", i, s.op, s.id, err, s.wantErr, s.want)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d %s %s: %v", i, s.op, s.id, err)
				}
				if s.want != "" && got != s.want {
					t.Fatalf("step %d %s %s: got %q, want %q", i, s.op, s.id, got, s.want)
				}
			}
		})
	}
}

// TestRegistryShares: each thing that took a cluster-wide share gives
// one back when it ends or its reservation is released, once; a
// reservation refused its share (unreserve) gives back none of the
// others'; a commit after shutdown releases the reservation and its
// share.
func TestRegistryShares(t *testing.T) {
	r := testRegistry(10, 0, 0, 0)
	released := 0
	share := func() { released++ }
	for _, id := range []string{"x", "y"} {
		if err := r.reserve("a", 5); err != nil {
			t.Fatal(err)
		}
		r.holdShare("a", share)
		r.commit("a", id, id)
	}
	if err := r.reserve("a", 5); err != nil { // refused its share
		t.Fatal(err)
	}
	r.unreserve("a")
	if released != 0 {
		t.Fatalf("unreserve gave back %d shares of other things, want 0", released)
	}
	r.end("x")
	r.end("x") // ending what has ended does nothing
	if released != 1 {
		t.Fatalf("after x ended: %d shares given back, want 1", released)
	}
	if err := r.reserve("a", 5); err != nil {
		t.Fatal(err)
	}
	r.holdShare("a", share)
	r.release("a")
	if released != 2 {
		t.Fatalf("after a reservation released: %d shares given back, want 2", released)
	}
	if err := r.reserve("a", 5); err != nil {
		t.Fatal(err)
	}
	r.holdShare("a", share)
	r.shutdown()
	if err := r.commitOpen("a", "z", "z"); !errors.Is(err, errShuttingDown) || released != 3 {
		t.Fatalf("commit after shutdown: %v with %d shares given back, want errShuttingDown and 3", err, released)
	}
	r.end("y")
	if released != 4 || len(r.shares) != 0 {
		t.Fatalf("after y ended: %d given back, %v held; want 4 and none", released, r.shares)
	}
}
