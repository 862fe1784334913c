package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// NodeInfo is a node's entry in the registry, as its last heartbeat wrote
// it.
type NodeInfo struct {
	// ID names the node.
	ID string `json:"id"`
	// Advertise is the node's HTTP base URL.
	Advertise string `json:"advertise"`
	// Images are the images it offers.
	Images []string `json:"images"`
	Load
	// StartedAt is when the node joined.
	StartedAt time.Time `json:"started_at"`
	// HeartbeatAt is when it wrote this entry, by its own clock.
	HeartbeatAt time.Time `json:"heartbeat_at"`
}

// info is this node's entry as of now.
func (n *Node) info() NodeInfo {
	i := NodeInfo{ID: n.cfg.NodeID, Advertise: n.cfg.Advertise, Images: n.cfg.Images, StartedAt: n.started, HeartbeatAt: time.Now().UTC()}
	if n.cfg.Load != nil {
		i.Load = n.cfg.Load()
	}
	return i
}

// beat writes the node's entry once and, when NATS acknowledges it,
// sends the session deletions that failed before.
func (n *Node) beat(ctx context.Context) error {
	b, err := json.Marshal(n.info())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.heartbeat)
	defer cancel()
	if _, err := n.buckets().nodes.Put(ctx, n.cfg.NodeID, b); err != nil {
		return err
	}
	n.mu.Lock()
	n.lastBeat = time.Now()
	back := n.cutOff
	n.cutOff = false
	unsent := make([]string, 0, len(n.unsent))
	for id := range n.unsent {
		unsent = append(unsent, id)
	}
	n.mu.Unlock()
	if back {
		n.log.Info("reached the cluster (NATS) again: taking new sessions")
		go n.giveUpTaken()
	}
	for _, id := range unsent {
		if err := n.buckets().owners.Delete(ctx, id); err == nil {
			n.mu.Lock()
			delete(n.unsent, id)
			n.mu.Unlock()
		}
	}
	n.flushShares(ctx)
	return nil
}

// Heartbeat writes the node's entry now, as the heartbeats do every
// interval: crucible serve calls it once its service is made, so that the
// registry shows the node's slots at once.
func (n *Node) Heartbeat(ctx context.Context) error { return n.beat(ctx) }

// heartbeats writes the node's entry every heartbeat interval until
// Close. When none has been acknowledged for the TTL, the node says so
// in its log: it now refuses new sessions (Admit).
func (n *Node) heartbeats() {
	defer close(n.done)
	t := time.NewTicker(n.cfg.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		err := n.beat(context.Background())
		if err == nil {
			continue
		}
		if n.nc.IsConnected() { // connected but refused: a restarted server lost the buckets
			if rerr := n.openBuckets(context.Background()); rerr == nil {
				err = n.beat(context.Background())
			}
		}
		if err == nil {
			continue
		}
		n.mu.Lock()
		since := time.Since(n.lastBeat)
		newlyCut := since > n.cfg.ttl && !n.cutOff
		if newlyCut {
			n.cutOff = true
		}
		n.mu.Unlock()
		if newlyCut {
			n.log.Error("cannot reach the cluster (NATS): the other nodes now take this node for down; refusing new sessions until it is back",
				"since", since.Round(time.Millisecond), "err", err)
		}
	}
}

// ErrCutOff is Admit's refusal while the node cannot reach NATS.
var ErrCutOff = errors.New("this node cannot reach the cluster (NATS), so it cannot record new sessions: it takes none until it is back; retry, or use another node")

// Admit returns nil while the node may take new sessions: NATS
// acknowledged a heartbeat within the TTL. Otherwise the other nodes
// already take it for down and it could not record the session: it
// returns ErrCutOff.
func (n *Node) Admit() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if time.Since(n.lastBeat) > n.cfg.ttl {
		return ErrCutOff
	}
	return nil
}

// Nodes returns the live nodes, in the order of their ids.
func (n *Node) Nodes(ctx context.Context) ([]NodeInfo, error) {
	return listNodes(ctx, n.buckets().nodes)
}

// errNodeDown is get's answer for a node without a live entry.
var errNodeDown = errors.New("cluster: the node is down")

// getNode returns the live node id's entry, errNodeDown if it has none.
func (n *Node) getNode(ctx context.Context, id string) (NodeInfo, error) {
	e, err := n.buckets().nodes.Get(ctx, id)
	if err != nil {
		if isNotFound(err) {
			return NodeInfo{ID: id}, errNodeDown
		}
		return NodeInfo{ID: id}, fmt.Errorf("cluster: look up node %s: %w", id, err)
	}
	var info NodeInfo
	if err := json.Unmarshal(e.Value(), &info); err != nil {
		return NodeInfo{ID: id}, fmt.Errorf("cluster: node %s's entry: %w", id, err)
	}
	return info, nil
}
