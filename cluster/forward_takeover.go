package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// takeOver moves id's catalog entry, o, whose node is down, to this
// node, and reports whether it did: a compare-and-set on the entry's
// revision, so that of two nodes asked at once only one takes it; the
// other finds the entry changed (false) and forwards to the winner.
// An analysis is the one kind taken over: its state is in the store, and
// this node rebuilds its session on its next question.
func (n *Node) takeOver(ctx context.Context, id string, o owner) (bool, error) {
	if err := n.Admit(); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	owners := n.buckets().owners
	e, err := owners.Get(ctx, id)
	if err != nil {
		if isNotFound(err) {
			return false, ErrUnknown
		}
		return false, fmt.Errorf("cluster: look up %s: %w", id, err)
	}
	var cur owner
	if err := json.Unmarshal(e.Value(), &cur); err != nil {
		return false, fmt.Errorf("cluster: %s's entry: %w", id, err)
	}
	if cur != o {
		return false, nil // moved meanwhile
	}
	mine := owner{Node: n.cfg.NodeID, Tenant: o.Tenant}
	b, _ := json.Marshal(mine)
	if _, err := owners.Update(ctx, id, b, e.Revision()); err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return false, nil // another node took it first
		}
		return false, fmt.Errorf("cluster: take over %s: %w", id, err)
	}
	n.mu.Lock()
	n.local[id] = o.Tenant
	n.mu.Unlock()
	n.owners.put(id, mine)
	return true, nil
}

// reclaimTimeout bounds giveUpTaken.
const reclaimTimeout = 30 * time.Second

// giveUpTaken forgets, when the node reaches NATS again after the
// others took it for down, what it held that another node took over
// meanwhile (an analysis whose entry now names that node): requests
// that reach this node for it are then forwarded to the new owner
// instead of being served by this node's stale copy.
func (n *Node) giveUpTaken() {
	n.mu.Lock()
	held := make([]string, 0, len(n.local))
	for id := range n.local {
		held = append(held, id)
	}
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), reclaimTimeout)
	defer cancel()
	owners := n.buckets().owners
	for _, id := range held {
		e, err := owners.Get(ctx, id)
		if err != nil {
			continue // gone, or NATS lost again: kept as it is
		}
		var o owner
		if json.Unmarshal(e.Value(), &o) != nil || o.Node == n.cfg.NodeID {
			continue
		}
		n.mu.Lock()
		delete(n.local, id)
		n.mu.Unlock()
		n.owners.put(id, o)
		n.log.Warn("another node took this over while this node was cut off; its requests go there now", "id", id, "node", o.Node)
	}
}
