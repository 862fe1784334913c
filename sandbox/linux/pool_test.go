package linux

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The pools' own logic, tested with fake sandboxes: no root, no
// namespaces, so these run under -race anywhere.

// fakeSandbox is a pooled sandbox that records what was done to it.
type fakeSandbox struct {
	dead     atomic.Bool
	held     atomic.Bool // a taker holds it
	released atomic.Int32
}

func (s *fakeSandbox) alive() bool { return !s.dead.Load() }

func (s *fakeSandbox) release() error {
	s.released.Add(1)
	return nil
}

// fakeBuilder builds fake sandboxes, failing while fail is set and
// waiting, once open is not nil, until open is closed.
type fakeBuilder struct {
	mu    sync.Mutex
	built []*fakeSandbox
	calls atomic.Int32
	fail  atomic.Bool
	open  chan struct{}
}

func (b *fakeBuilder) build() (*fakeSandbox, error) {
	b.calls.Add(1)
	b.mu.Lock()
	open := b.open
	b.mu.Unlock()
	if open != nil {
		<-open
	}
	if b.fail.Load() {
		return nil, errors.New("the fake host cannot build")
	}
	s := &fakeSandbox{}
	b.mu.Lock()
	b.built = append(b.built, s)
	b.mu.Unlock()
	return s, nil
}

// hold makes the builds from now on wait until the channel returned is
// closed.
func (b *fakeBuilder) hold() chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open = make(chan struct{})
	return b.open
}

func (b *fakeBuilder) all() []*fakeSandbox {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*fakeSandbox(nil), b.built...)
}

// poolKind is one of the three pools, with what it does on take and put.
type poolKind struct {
	name string
	new  func(size int, build func() (*fakeSandbox, error)) sandboxPool[*fakeSandbox]
	// replacedOnTake: a sandbox taken is replaced at once (detachPool).
	replacedOnTake bool
	// reuses: a sandbox put with no reason to retire it comes back
	// (recyclePool).
	reuses bool
}

var poolKinds = []poolKind{
	{name: "one-shot", new: func(n int, b func() (*fakeSandbox, error)) sandboxPool[*fakeSandbox] {
		return newOneShotPool("test", n, b, quiet)
	}},
	{name: "recycle", reuses: true, new: func(n int, b func() (*fakeSandbox, error)) sandboxPool[*fakeSandbox] {
		return newRecyclePool("test", n, b, 5*time.Millisecond, quiet)
	}},
	{name: "detach", replacedOnTake: true, new: func(n int, b func() (*fakeSandbox, error)) sandboxPool[*fakeSandbox] {
		return newDetachPool("test", n, b, nil, quiet)
	}},
}

// quiet takes the pools' logs in these tests (their failures are wanted).
var quiet = slog.New(slog.DiscardHandler)

// errFakeReset retires a sandbox put back, as a failed reset would.
var errFakeReset = retireFor(retiredResetFailed, errors.New("the fake reset failed"))

// eventually waits up to 5 s for cond, failing with what otherwise.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %s", what)
		}
	}
}

// closeWithin closes pool, failing the test if that takes over 5 s (a
// sandbox taken from a recyclePool and never put back holds close, so a
// failing test must not hang).
func closeWithin(t *testing.T, pool sandboxPool[*fakeSandbox]) {
	t.Helper()
	closed := make(chan struct{})
	go func() { pool.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Error("the pool's close did not return within 5s")
	}
}

// TestPoolTakeMissThenHit: a take from an empty pool is a miss and
// returns at once; once the pool is full a take is a hit.
func TestPoolTakeMissThenHit(t *testing.T) {
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			b := &fakeBuilder{}
			open := b.hold()
			pool := k.new(2, b.build)
			defer closeWithin(t, pool)
			start := time.Now()
			if s, ok := pool.take(context.Background()); ok || s != nil {
				t.Fatalf("take from an empty pool gave %p, %v", s, ok)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("a miss took %v", d)
			}
			if st := pool.stats(); st.Misses != 1 || st.Hits != 0 || st.Ready != 0 || st.Size != 2 {
				t.Fatalf("after a miss: %+v", st)
			}
			close(open)
			eventually(t, "the pool is full", func() bool { return pool.stats().Ready == 2 })
			s, ok := pool.take(context.Background())
			if !ok || s == nil || !s.alive() {
				t.Fatalf("take from a full pool gave %p, %v", s, ok)
			}
			if st := pool.stats(); st.Misses != 1 || st.Hits != 1 {
				t.Fatalf("after a hit: %+v", st)
			}
			_ = pool.put(s, nil)
		})
	}
}

// TestPoolRefill: what each kind builds, keeps and destroys around a
// take and a put, and when it builds the replacement (when the run ends,
// not while it runs; at once for a session's).
func TestPoolRefill(t *testing.T) {
	for _, k := range poolKinds {
		for _, why := range []error{nil, errFakeReset} {
			reuse := why == nil
			t.Run(k.name+map[bool]string{true: "/reuse", false: "/no-reuse"}[reuse], func(t *testing.T) {
				b := &fakeBuilder{}
				pool := k.new(2, b.build)
				defer closeWithin(t, pool)
				eventually(t, "the pool is full", func() bool { return pool.stats().Ready == 2 })
				s, ok := pool.take(context.Background())
				if !ok {
					t.Fatal("no sandbox from a full pool")
				}
				time.Sleep(5 * refillDelay)
				wantBuilt := 2
				if k.replacedOnTake {
					wantBuilt = 3
					eventually(t, "the taken sandbox replaced", func() bool { return pool.stats().Ready == 2 })
				}
				if n := len(b.all()); n != wantBuilt {
					t.Fatalf("while the sandbox is taken: %d built, want %d", n, wantBuilt)
				}
				if err := pool.put(s, why); err != nil {
					t.Fatal(err)
				}
				kept := k.reuses && reuse
				if !kept && !k.replacedOnTake {
					wantBuilt++
				}
				eventually(t, "the pool full again", func() bool { return pool.stats().Ready == 2 })
				time.Sleep(5 * refillDelay)
				if n := len(b.all()); n != wantBuilt {
					t.Fatalf("after the put: %d built, want %d", n, wantBuilt)
				}
				if want := map[bool]int32{true: 0, false: 1}[kept]; s.released.Load() != want {
					t.Fatalf("the sandbox put was released %d times, want %d", s.released.Load(), want)
				}
				retired := uint64(0)
				if !reuse {
					retired = 1
				}
				if st := pool.stats(); st.Retired != retired || st.RetiredBy[retiredResetFailed] != retired {
					t.Fatalf("retired %d (%v), want %d for %s", st.Retired, st.RetiredBy, retired, retiredResetFailed)
				}
				if kept { // the slot comes back and serves again
					var again bool
					for range 2 {
						s2, ok := pool.take(context.Background())
						if !ok {
							t.Fatal("no sandbox from a full pool")
						}
						defer func() { _ = pool.put(s2, nil) }()
						again = again || s2 == s
					}
					if !again {
						t.Fatal("the recycled sandbox was not taken again")
					}
				}
			})
		}
	}
}

// TestPoolReplacesDead: a ready sandbox that died is not handed out: it
// is released and replaced.
func TestPoolReplacesDead(t *testing.T) {
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			b := &fakeBuilder{}
			pool := k.new(1, b.build)
			defer closeWithin(t, pool)
			eventually(t, "the pool is full", func() bool { return pool.stats().Ready == 1 })
			dead := b.all()[0]
			dead.dead.Store(true)
			if s, ok := pool.take(context.Background()); ok {
				t.Fatalf("took %p, want a miss (the only sandbox is dead)", s)
			}
			if dead.released.Load() != 1 {
				t.Fatalf("the dead sandbox was released %d times, want 1", dead.released.Load())
			}
			if st := pool.stats(); st.RetiredBy[retiredDead] != 1 {
				t.Fatalf("retired %v, want 1 for %s", st.RetiredBy, retiredDead)
			}
			eventually(t, "the dead sandbox replaced", func() bool { return pool.stats().Ready == 1 })
			s, ok := pool.take(context.Background())
			if !ok || s == dead {
				t.Fatalf("took %p, %v after the replacement", s, ok)
			}
			_ = pool.put(s, errFakeReset)
		})
	}
}

// TestPoolBuildFailureBacksOff: a builder that keeps failing is retried
// with a growing delay, not in a loop, and the pool fills once it builds
// again.
func TestPoolBuildFailureBacksOff(t *testing.T) {
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			b := &fakeBuilder{}
			b.fail.Store(true)
			pool := k.new(1, b.build)
			defer closeWithin(t, pool)
			time.Sleep(500 * time.Millisecond)
			// 10 ms, then 10, 20, 40, 80, 160 ms between tries: 6 in the
			// first half second (fewer on a slow machine).
			n := b.calls.Load()
			if n < 1 || n > 8 {
				t.Fatalf("%d builds in 500ms while building fails, want 1 to 8", n)
			}
			if f := pool.stats().BuildFailures; f < 1 || f > uint64(n) {
				t.Fatalf("%d build failures counted after %d failed builds", f, n)
			}
			b.fail.Store(false)
			eventually(t, "the pool filled once building works", func() bool { return pool.stats().Ready == 1 })
		})
	}
}

// TestPoolCloseWaits: close waits for a build in progress and for a
// recycled slot still out, releases every sandbox built, and leaves no
// goroutine behind.
func TestPoolCloseWaits(t *testing.T) {
	before := runtime.NumGoroutine()
	b := &fakeBuilder{}
	pool := newRecyclePool("test", 2, b.build, 5*time.Millisecond, quiet)
	eventually(t, "the pool is full", func() bool { return pool.stats().Ready == 2 })
	out, _ := pool.take(context.Background()) // a run in progress
	retired, _ := pool.take(context.Background())
	open := b.hold()
	_ = pool.put(retired, errFakeReset) // its replacement's build waits for open
	eventually(t, "the replacement's build started", func() bool { return b.calls.Load() == 3 })

	closed := make(chan struct{})
	go func() { pool.close(); close(closed) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-closed:
		t.Fatal("close returned while a build was in progress")
	default:
	}
	close(open)
	time.Sleep(50 * time.Millisecond)
	select {
	case <-closed:
		t.Fatal("close returned while a slot was out for its reset")
	default:
	}
	_ = pool.put(out, nil)
	<-closed
	for i, s := range b.all() {
		if n := s.released.Load(); n != 1 {
			t.Errorf("sandbox %d released %d times, want 1", i, n)
		}
	}
	if s, ok := pool.take(context.Background()); ok {
		t.Errorf("a closed pool gave %p", s)
	}
	eventually(t, "the pool's goroutines ended", func() bool { return runtime.NumGoroutine() <= before })
}

// TestPoolConcurrentTake: many takers at once never share a sandbox, every
// take counts as a hit or a miss, and after close each sandbox built has
// been released exactly once. Run it with -race.
func TestPoolConcurrentTake(t *testing.T) {
	const takers, takes = 16, 40
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			b := &fakeBuilder{}
			pool := k.new(4, b.build)
			eventually(t, "the pool is full", func() bool { return pool.stats().Ready == 4 })
			var wg sync.WaitGroup
			var shared atomic.Int32
			for i := range takers {
				wg.Go(func() {
					for j := range takes {
						s, ok := pool.take(context.Background())
						if !ok {
							time.Sleep(time.Millisecond)
							continue
						}
						if !s.held.CompareAndSwap(false, true) {
							shared.Add(1)
						}
						time.Sleep(100 * time.Microsecond)
						s.held.Store(false)
						var why error
						if (i+j)%5 == 0 {
							why = errFakeReset
						}
						_ = pool.put(s, why)
					}
				})
			}
			wg.Wait()
			st := pool.stats()
			closeWithin(t, pool)
			if n := shared.Load(); n != 0 {
				t.Fatalf("%d takes got a sandbox another taker held", n)
			}
			if st.Hits+st.Misses != takers*takes {
				t.Fatalf("hits %d + misses %d, want %d takes", st.Hits, st.Misses, takers*takes)
			}
			if st.Hits == 0 {
				t.Fatal("no take was a hit")
			}
			for i, s := range b.all() {
				if n := s.released.Load(); n != 1 {
					t.Errorf("sandbox %d of %d released %d times, want 1", i, len(b.all()), n)
				}
			}
		})
	}
}

// TestPoolTakeWaitsForRecycle: a recyclePool whose slots are all out
// being reset waits for one, up to its wait or the taker's context;
// a pool with no slot out misses at once (TestPoolTakeMissThenHit).
func TestPoolTakeWaitsForRecycle(t *testing.T) {
	cases := []struct {
		name       string
		wait       time.Duration
		put        bool // the slot comes back after 20 ms
		cancel     bool // the taker's context ends after 20 ms
		hit        bool
		wantMisses uint64
	}{
		{name: "slot back within the wait", wait: 5 * time.Second, put: true, hit: true},
		{name: "wait runs out", wait: 20 * time.Millisecond, wantMisses: 1},
		{name: "context ends", wait: 5 * time.Second, cancel: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &fakeBuilder{}
			pool := newRecyclePool("test", 1, b.build, c.wait, quiet)
			defer closeWithin(t, pool)
			eventually(t, "the pool is full", func() bool { return pool.stats().Ready == 1 })
			out, _ := pool.take(context.Background())
			if c.put {
				time.AfterFunc(20*time.Millisecond, func() { _ = pool.put(out, nil) })
			} else {
				defer func() { _ = pool.put(out, nil) }()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(20*time.Millisecond, cancel)
			}
			s, ok := pool.take(ctx)
			if ok != c.hit || (ok && s != out) {
				t.Fatalf("take gave %p, %v; want the slot back: %v", s, ok, c.hit)
			}
			if ok {
				defer func() { _ = pool.put(s, nil) }()
			}
			if st := pool.stats(); st.Misses != c.wantMisses || st.Hits != map[bool]uint64{true: 2, false: 1}[c.hit] {
				t.Fatalf("stats %+v, want %d misses", st, c.wantMisses)
			}
		})
	}
}
