package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// owner is a session's entry in the catalog.
type owner struct {
	// Node holds the session.
	Node string `json:"node"`
	// Tenant owns it: another tenant's request for it is never
	// forwarded, nor told where it was.
	Tenant string `json:"tenant"`
}

// ErrUnknown is Owner's answer for an id the catalog does not hold.
var ErrUnknown = errors.New("cluster: no such session in the catalog")

// Opened records tenant's session id as this node's, so that the other
// nodes forward its requests here; it fails, and the session must not be
// offered, when the node is cut off (Admit) or NATS does not acknowledge
// the entry.
func (n *Node) Opened(ctx context.Context, id, tenant string) error {
	if err := n.Admit(); err != nil {
		return err
	}
	b, _ := json.Marshal(owner{Node: n.cfg.NodeID, Tenant: tenant})
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := n.buckets().owners.Put(ctx, id, b); err != nil {
		return fmt.Errorf("%w (%v)", ErrCutOff, err)
	}
	n.mu.Lock()
	n.local[id] = tenant
	n.mu.Unlock()
	return nil
}

// Ended deletes session id's entry. When NATS does not acknowledge it,
// the next heartbeat that gets through sends it again.
func (n *Node) Ended(id string) {
	n.mu.Lock()
	delete(n.local, id)
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := n.buckets().owners.Delete(ctx, id); err != nil {
		n.mu.Lock()
		n.unsent[id] = true
		n.mu.Unlock()
	}
}

// holds reports whether session id was recorded by this node and has
// not ended: its requests are served here without asking NATS.
func (n *Node) holds(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.local[id]
	return ok
}

// Owner returns the node that holds session id and whether it is alive
// (has a live entry in the registry; a dead node's NodeInfo has only its
// ID). An id the catalog does not hold is ErrUnknown.
func (n *Node) Owner(ctx context.Context, id string) (node NodeInfo, alive bool, err error) {
	_, node, alive, err = n.owner(ctx, id, false)
	return node, alive, err
}

// owner is Owner, with the session's catalog entry; cached takes the
// entry from the cache of owners when it is there (ownerCache).
func (n *Node) owner(ctx context.Context, id string, cached bool) (owner, NodeInfo, bool, error) {
	if !validKey(id) { // no session has such an id; nor may it reach NATS as a subject (*, >)
		return owner{}, NodeInfo{}, false, ErrUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var o owner
	ok := false
	if cached {
		o, ok = n.owners.get(id)
	}
	if !ok {
		e, err := n.buckets().owners.Get(ctx, id)
		if err != nil {
			if isNotFound(err) {
				return owner{}, NodeInfo{}, false, ErrUnknown
			}
			return owner{}, NodeInfo{}, false, fmt.Errorf("cluster: look up session %s: %w", id, err)
		}
		if err := json.Unmarshal(e.Value(), &o); err != nil {
			return owner{}, NodeInfo{}, false, fmt.Errorf("cluster: session %s's entry: %w", id, err)
		}
		n.owners.put(id, o)
	}
	info, err := n.getNode(ctx, o.Node)
	if errors.Is(err, errNodeDown) {
		return o, info, false, nil
	}
	return o, info, err == nil, err
}

// validKey reports whether id may be a key of a bucket: 1-255 characters
// of a-z, A-Z, 0-9 and -_=/. , not starting or ending with '.' (NATS's
// rule; session ids are of a-z, 0-9 and '_').
func validKey(id string) bool {
	if id == "" || len(id) > 255 || id[0] == '.' || id[len(id)-1] == '.' {
		return false
	}
	for _, c := range id {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.ContainsRune("-_=/.", c):
		default:
			return false
		}
	}
	return true
}

// maxCachedOwners bounds the cache of owners; when it is full it is
// emptied, so that a flood of ids cannot grow memory.
const maxCachedOwners = 10_000

// ownerCache remembers the owners of sessions looked up: an entry never
// changes while it exists (a session stays on its node and tenant), so a
// forwarded request asks NATS only whether the owner is alive. An entry
// that was deleted since (the session ended, or its node came back and
// forgot it) sends the request to that node, which answers it closed or
// unknown itself, as the catalog would have.
type ownerCache struct {
	mu sync.Mutex
	m  map[string]owner
}

func (c *ownerCache) get(id string) (owner, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.m[id]
	return o, ok
}

func (c *ownerCache) put(id string, o owner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedOwners {
		c.m = map[string]owner{}
	}
	c.m[id] = o
}

// isNotFound reports whether err says a key is absent or deleted.
func isNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
}
