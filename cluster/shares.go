package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// SharesBucket maps KIND.TENANT (runs.acme, sessions.acme,
// agent_runs.acme) to each node's count of that tenant's things of that
// kind, {"node-a": 2, "node-b": 1}, on disk (a NATS restart keeps the
// counts, as it keeps the catalog). A node writes only its own count,
// always with compare-and-set on the entry's revision; the counts of a
// node without a live entry in the registry are not counted.
const SharesBucket = "crucible_shares"

// maxShareAttempts bounds how many times one acquire or release reads
// and writes an entry that other nodes keep changing under it.
const maxShareAttempts = 100

// shareTally is what this node holds of tenants' shares: its counts, as
// they must stand in the bucket, and which entries may not show them.
type shareTally struct {
	mu    sync.Mutex
	held  map[string]int         // key → this node's count
	locks map[string]*sync.Mutex // key → serializes this node's writes of it
	dirty map[string]bool        // keys whose last write of held failed
	// conflicts counts the writes refused because another node wrote
	// the entry since it was read (and retried), for tests.
	conflicts int
	// beforeWrite, when set (tests), runs between the read of an entry
	// and its write.
	beforeWrite func(key string)
}

// lock returns the lock of key, which serializes this node's reads and
// writes of its entry: two of this node's acquires never conflict with
// each other.
func (t *shareTally) lock(key string) *sync.Mutex {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.locks == nil {
		t.locks, t.held, t.dirty = map[string]*sync.Mutex{}, map[string]int{}, map[string]bool{}
	}
	l := t.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		t.locks[key] = l
	}
	return l
}

func (t *shareTally) count(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held[key]
}

func (t *shareTally) set(key string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n <= 0 {
		delete(t.held, key)
	} else {
		t.held[key] = n
	}
}

func (t *shareTally) markDirty(key string, dirty bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if dirty {
		t.dirty[key] = true
	} else {
		delete(t.dirty, key)
	}
}

// sharesBucket opens the shares bucket, creating it if need be.
func sharesBucket(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: SharesBucket,
		Storage: jetstream.FileStorage, Description: "Crucible tenants' shares: kind.tenant → each node's count"})
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", SharesBucket, err)
	}
	return kv, nil
}

// errSharesUnreachable is Acquire's refusal when NATS does not answer.
func errSharesUnreachable(kind, tenant string, err error) error {
	return fmt.Errorf("this node cannot reach the cluster (NATS) to count tenant %q's %s against its cluster-wide share, so it takes none until it is back; retry, or use another node (%v)",
		tenant, kind, err)
}

// Acquire counts one more of tenant's things of kind on this node in
// the shares bucket, unless the live nodes already hold max: then it
// returns a nil release and how many they hold. It reads the entry,
// sums this node's count and those of the other nodes that are alive
// (a dead node's counts stop counting when its registry entry expires),
// and writes this node's count plus one at the revision it read; when
// another node wrote in between, it reads again. A node cut off from
// NATS (Admit), or whose reads or writes fail, refuses: it cannot know
// what the others hold, and counting alone it would let each side of a
// partition take the whole share. release writes the count minus one
// the same way; if that fails, the next heartbeat that gets through
// writes it.
func (n *Node) Acquire(ctx context.Context, kind, tenant string, max int) (release func(), held int, err error) {
	key := kind + "." + tenant
	if !validKey(key) {
		return nil, 0, fmt.Errorf("cluster: share %q: kind and tenant must be of a-z, 0-9, '_' and '-'", key)
	}
	if err := n.Admit(); err != nil {
		return nil, 0, errSharesUnreachable(kind, tenant, err)
	}
	l := n.shares.lock(key)
	l.Lock()
	defer l.Unlock()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	for range maxShareAttempts {
		counts, rev, err := n.readShare(ctx, key)
		if err != nil {
			return nil, 0, errSharesUnreachable(kind, tenant, err)
		}
		mine := n.shares.count(key)
		held, err := n.heldBy(ctx, counts, mine, max)
		if err != nil {
			return nil, 0, errSharesUnreachable(kind, tenant, err)
		}
		if held >= max {
			return nil, held, nil
		}
		switch err := n.writeShare(ctx, key, counts, mine+1, rev); {
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			continue
		case err != nil:
			n.shares.markDirty(key, true) // it may have been written all the same
			return nil, 0, errSharesUnreachable(kind, tenant, err)
		}
		n.shares.set(key, mine+1)
		var once sync.Once
		return func() { once.Do(func() { n.releaseShare(key) }) }, held + 1, nil
	}
	return nil, 0, errSharesUnreachable(kind, tenant, errors.New("the entry kept changing"))
}

// heldBy returns how many of the things counts holds count against a
// share of max: this node's (mine, its own tally, whatever the entry
// says) and those of the other nodes that are alive. Only when all of
// them together reach max does it ask the registry which are alive.
func (n *Node) heldBy(ctx context.Context, counts map[string]int, mine, max int) (int, error) {
	held := mine
	var others []string
	for node, c := range counts {
		if node != n.cfg.NodeID && c > 0 {
			held += c
			others = append(others, node)
		}
	}
	sort.Strings(others)
	for _, node := range others {
		if held < max {
			break
		}
		_, err := n.getNode(ctx, node)
		switch {
		case errors.Is(err, errNodeDown):
			held -= counts[node]
		case err != nil:
			return 0, err
		}
	}
	return held, nil
}

// releaseShare gives back one of this node's things of key: the tally
// at once, the entry now or, if NATS does not take it, with the next
// heartbeat that gets through (flushShares).
func (n *Node) releaseShare(key string) {
	l := n.shares.lock(key)
	l.Lock()
	defer l.Unlock()
	n.shares.set(key, n.shares.count(key)-1)
	if n.Admit() != nil {
		n.shares.markDirty(key, true)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n.shares.markDirty(key, n.syncShare(ctx, key) != nil)
}

// syncShare writes this node's tally of key into its entry; the key's
// lock is held.
func (n *Node) syncShare(ctx context.Context, key string) error {
	for range maxShareAttempts {
		counts, rev, err := n.readShare(ctx, key)
		if err != nil {
			return err
		}
		err = n.writeShare(ctx, key, counts, n.shares.count(key), rev)
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return err
		}
	}
	return errors.New("cluster: the entry kept changing")
}

// flushShares writes the tallies whose last write failed; beat calls it
// once NATS acknowledged a heartbeat.
func (n *Node) flushShares(ctx context.Context) {
	n.shares.mu.Lock()
	keys := make([]string, 0, len(n.shares.dirty))
	for key := range n.shares.dirty {
		keys = append(keys, key)
	}
	n.shares.mu.Unlock()
	for _, key := range keys {
		l := n.shares.lock(key)
		l.Lock()
		if n.syncShare(ctx, key) == nil {
			n.shares.markDirty(key, false)
		}
		l.Unlock()
	}
}

// readShare returns the counts of key's entry and its revision (0 and no
// counts when there is none).
func (n *Node) readShare(ctx context.Context, key string) (map[string]int, uint64, error) {
	e, err := n.buckets().shares.Get(ctx, key)
	switch {
	case isNotFound(err):
		return map[string]int{}, 0, nil
	case err != nil:
		return nil, 0, err
	}
	counts := map[string]int{}
	if err := json.Unmarshal(e.Value(), &counts); err != nil {
		return nil, 0, fmt.Errorf("cluster: share %s's entry: %w", key, err)
	}
	return counts, e.Revision(), nil
}

// writeShare writes counts with this node's count set to mine (dropped
// at zero: an entry holds the nodes that hold something) at revision rev
// (0: the key must not exist yet). Another node's write since is
// jetstream.ErrKeyRevisionMismatch.
func (n *Node) writeShare(ctx context.Context, key string, counts map[string]int, mine int, rev uint64) error {
	if mine > 0 {
		counts[n.cfg.NodeID] = mine
	} else {
		delete(counts, n.cfg.NodeID)
	}
	b, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	if f := n.shares.beforeWrite; f != nil {
		f(key)
	}
	_, err = n.buckets().shares.Update(ctx, key, b, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		n.shares.mu.Lock()
		n.shares.conflicts++
		n.shares.mu.Unlock()
	}
	return err
}

// forgetShares sets this node's counts to zero in every entry: a previous
// process of the same id held them, and its things died with it. Join
// calls it before the node's first heartbeat.
func (n *Node) forgetShares(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := n.buckets().shares.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("cluster: read %s: %w", SharesBucket, err)
	}
	defer w.Stop()
	var stale []string
	for e := range w.Updates() {
		if e == nil { // the end of the entries already there
			break
		}
		var counts map[string]int
		if json.Unmarshal(e.Value(), &counts) == nil && counts[n.cfg.NodeID] != 0 {
			stale = append(stale, e.Key())
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("cluster: read %s: %w", SharesBucket, ctx.Err())
	}
	for _, key := range stale {
		if err := n.syncShare(ctx, key); err != nil { // the tally is empty: it writes zero
			return fmt.Errorf("cluster: forget the share %s a previous process held: %w", key, err)
		}
	}
	if len(stale) > 0 {
		n.log.Info("forgot the tenants' shares a previous process of this node held", "entries", len(stale))
	}
	return nil
}
