package cluster

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// acquire is n.Acquire of one of tenant acme's sessions within max.
func acquire(t *testing.T, n *Node, max int) (release func(), held int) {
	t.Helper()
	release, held, err := n.Acquire(context.Background(), "sessions", "acme", max)
	if err != nil {
		t.Fatalf("%s: acquire: %v", n.ID(), err)
	}
	return release, held
}

// entryCounts reads sessions.acme's entry as n sees it.
func entryCounts(t *testing.T, n *Node) map[string]int {
	t.Helper()
	counts, _, err := n.readShare(context.Background(), "sessions.acme")
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// TestSharesConcurrentAcquires: twenty acquires at once from each of two
// nodes, of a share of 3, on Debian's nats-server: exactly 3 are granted
// (never more, whatever the interleaving of the nodes' compare-and-set
// writes); once they are released the entry is empty and 3 more are.
func TestSharesConcurrentAcquires(t *testing.T) {
	url := startDebianNATS(t)
	a, _ := testNode(t, url, "node-a", "http://127.0.0.1:1")
	b, _ := testNode(t, url, "node-b", "http://127.0.0.1:2")
	for round := range 2 {
		var granted atomic.Int32
		var mu sync.Mutex
		var releases []func()
		var wg sync.WaitGroup
		for i := range 40 {
			n := a
			if i%2 == 1 {
				n = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, held, err := n.Acquire(context.Background(), "sessions", "acme", 3)
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				if release == nil {
					if held < 3 {
						t.Errorf("refused with %d held of 3", held)
					}
					return
				}
				granted.Add(1)
				mu.Lock()
				releases = append(releases, release)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if g := granted.Load(); g != 3 {
			t.Fatalf("round %d: %d acquires granted of a share of 3", round, g)
		}
		for _, r := range releases {
			r()
		}
		if c := entryCounts(t, a); len(c) != 0 {
			t.Fatalf("round %d: all released, the entry still counts %v", round, c)
		}
	}
	a.shares.mu.Lock()
	b.shares.mu.Lock()
	t.Logf("conflicts retried: node-a %d, node-b %d", a.shares.conflicts, b.shares.conflicts)
	b.shares.mu.Unlock()
	a.shares.mu.Unlock()
}

// TestSharesConflictRetry: another node writes the entry between node
// A's read and its write; A's write is refused for the revision and A
// reads again, counting B's: with room left it is granted, without it
// is refused, and never both take the last one.
func TestSharesConflictRetry(t *testing.T) {
	url := startDebianNATS(t)
	a, _ := testNode(t, url, "node-a", "http://127.0.0.1:1")
	b, _ := testNode(t, url, "node-b", "http://127.0.0.1:2")
	for _, tc := range []struct {
		max      int
		granted  bool
		wantHeld int
	}{{max: 2, granted: true, wantHeld: 2}, {max: 1, granted: false, wantHeld: 1}} {
		var bRelease func()
		a.shares.conflicts = 0
		a.shares.beforeWrite = func(string) {
			a.shares.beforeWrite = nil // once
			bRelease, _ = acquire(t, b, tc.max)
			if bRelease == nil {
				t.Fatalf("max %d: node B refused", tc.max)
			}
		}
		release, held := acquire(t, a, tc.max)
		if (release != nil) != tc.granted || held != tc.wantHeld {
			t.Errorf("max %d: node A granted %v with %d held, want %v with %d", tc.max, release != nil, held, tc.granted, tc.wantHeld)
		}
		if a.shares.conflicts != 1 {
			t.Errorf("max %d: node A's conflicts: %d, want 1 (its write at the revision it read refused, then retried)", tc.max, a.shares.conflicts)
		}
		if release != nil {
			release()
		}
		bRelease()
		if c := entryCounts(t, a); len(c) != 0 {
			t.Errorf("max %d: released, the entry still counts %v", tc.max, c)
		}
	}
}

// TestSharesDeadNode: node A holds the whole share and dies without a
// word; node B is refused while A's registry entry lives, and granted
// once it expires (the TTL), without anyone deleting A's counts. A node
// that joins again under A's id forgets them at once.
func TestSharesDeadNode(t *testing.T) {
	url := startDebianNATS(t)
	a, _ := testNode(t, url, "node-a", "http://127.0.0.1:1")
	b, _ := testNode(t, url, "node-b", "http://127.0.0.1:2")
	acquire(t, a, 2)
	acquire(t, a, 2)
	if r, held := acquire(t, b, 2); r != nil || held != 2 {
		t.Fatalf("node B with node A holding the share of 2: granted %v, held %d", r != nil, held)
	}
	crash(a)
	died := time.Now()
	if r, _ := acquire(t, b, 2); r != nil {
		t.Fatal("node B granted at once after node A died: its entry still lives, its counts must still count")
	}
	var release func()
	waitFor(t, testTTL+5*time.Second, "node B granted once node A's entry expired", func() bool {
		release, _ = acquire(t, b, 2)
		return release != nil
	})
	t.Logf("granted %v after node A died (TTL %v)", time.Since(died).Round(time.Millisecond), testTTL)
	if time.Since(died) < testTTL-testHeartbeat {
		t.Errorf("granted %v after node A died, before its entry's TTL %v", time.Since(died), testTTL)
	}
	if c := entryCounts(t, b); c["node-a"] != 2 {
		t.Errorf("entry %v: node A's counts are ignored, not deleted, while it is down", c)
	}
	release()

	// Node A back under its id: its old counts go at join.
	testNode(t, url, "node-a", "http://127.0.0.1:1")
	if c := entryCounts(t, b); c["node-a"] != 0 {
		t.Errorf("entry %v after node A joined again: its previous counts remain", c)
	}
}

// TestSharesRejoinResets: a node that comes back under the id of one
// that held the share (still alive in the registry a moment ago) resets
// its counts at join: the share is free at once, not after the TTL.
func TestSharesRejoinResets(t *testing.T) {
	url := startDebianNATS(t)
	a, _ := testNode(t, url, "node-a", "http://127.0.0.1:1")
	b, _ := testNode(t, url, "node-b", "http://127.0.0.1:2")
	acquire(t, a, 2)
	acquire(t, a, 2)
	crash(a)
	testNode(t, url, "node-a", "http://127.0.0.1:1")
	if r, held := acquire(t, b, 2); r == nil {
		t.Errorf("node B refused (%d held) after node A came back: its previous counts still count", held)
	}
}

// TestSharesCutOff: cut off from NATS, a node refuses (it cannot know
// what the others hold) with an error saying so; a release while cut
// off is written once a heartbeat gets through again.
func TestSharesCutOff(t *testing.T) {
	ns := startNATS(t)
	a, _ := testNode(t, ns.url(), "node-a", "http://127.0.0.1:1")
	b, _ := testNode(t, ns.url(), "node-b", "http://127.0.0.1:2")
	release, _ := acquire(t, a, 2)
	ns.stop()
	_, _, err := a.Acquire(context.Background(), "sessions", "acme", 2)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the cluster (NATS)") {
		t.Fatalf("acquire cut off from NATS: %v, want a refusal saying it cannot reach the cluster", err)
	}
	release() // cannot be written now
	if a.shares.count("sessions.acme") != 0 {
		t.Errorf("tally after release: %d, want 0", a.shares.count("sessions.acme"))
	}
	ns.start()
	waitFor(t, 15*time.Second, "node A's release written after NATS came back", func() bool {
		counts, _, err := b.readShare(context.Background(), "sessions.acme")
		return err == nil && counts["node-a"] == 0
	})
	waitFor(t, 15*time.Second, "node B granted both of the share", func() bool {
		r1, _, err1 := b.Acquire(context.Background(), "sessions", "acme", 2)
		if err1 != nil || r1 == nil {
			return false
		}
		r2, _, err2 := b.Acquire(context.Background(), "sessions", "acme", 2)
		if err2 != nil || r2 == nil {
			r1()
			return false
		}
		return true
	})
}

// TestSharesKey: a kind or tenant that cannot make a key is refused
// before NATS is asked.
func TestSharesKey(t *testing.T) {
	url := startDebianNATS(t)
	a, _ := testNode(t, url, "node-a", "http://127.0.0.1:1")
	for _, tenant := range []string{"", "a b", "a*", "a>"} {
		if _, _, err := a.Acquire(context.Background(), "sessions", tenant, 2); err == nil || !strings.Contains(err.Error(), "must be of") {
			t.Errorf("tenant %q: %v, want refused", tenant, err)
		}
	}
}
