package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
