package cluster

import (
	"context"
	"errors"
)

// NodeAlive reports whether node id has a live entry in the registry
// (service.NodeLiveness): a run or analysis recorded by a node that has
// none is settled or taken over by the node that finds it.
func (n *Node) NodeAlive(ctx context.Context, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := n.getNode(ctx, id)
	if errors.Is(err, errNodeDown) {
		return false, nil
	}
	return err == nil, err
}
