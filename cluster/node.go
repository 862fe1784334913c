package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The key-value buckets of the cluster.
const (
	// NodesBucket maps a node id to its NodeInfo, in memory on the NATS
	// server: entries live NodeTTL past their last heartbeat.
	NodesBucket = "crucible_nodes"
	// OwnersBucket maps a session id to its owner (node and tenant), on
	// disk, so that a restarted NATS server still knows where sessions
	// are. An entry is written when a session opens and deleted when it
	// ends; a node's entries are deleted when it joins again (Join).
	OwnersBucket = "crucible_owners"
)

// opTimeout bounds one request to NATS (a put, a get, a delete).
const opTimeout = 2 * time.Second

// Node is this server's membership of the cluster. Create it with Join;
// Close leaves.
type Node struct {
	cfg     Config
	log     *slog.Logger
	embed   *natsserver.Server // nil unless Config.URL is Embedded
	nc      *nats.Conn
	started time.Time
	owners  ownerCache // of the sessions other nodes hold, looked up
	shares  shareTally // what this node holds of tenants' shares (shares.go)

	mu       sync.Mutex
	kv       kvs               // the buckets, reopened after a NATS restart
	local    map[string]string // sessions recorded here: id → tenant
	unsent   map[string]bool   // ended sessions whose entry is still to delete
	lastBeat time.Time         // when NATS last acknowledged a heartbeat
	cutOff   bool              // lastBeat is older than the TTL (logged once)

	stop chan struct{}
	done chan struct{}
}

// Join joins the cluster cfg names: it starts the embedded NATS server
// if asked to, connects, opens the buckets (creating them if need be),
// deletes the catalog entries that name this node (sessions a previous
// process of the same id held died with it) and its counts in tenants'
// shares (forgetShares), writes its first heartbeat
// and keeps writing them until Close.
func Join(ctx context.Context, cfg Config) (*Node, error) {
	cfg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), started: time.Now().UTC(),
		local: map[string]string{}, unsent: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	natsURL := cfg.URL
	if natsURL == Embedded {
		n.embed, natsURL, err = startEmbedded(cfg)
		if err != nil {
			return nil, err
		}
		n.log.Info("embedded NATS server started; other nodes join with --cluster nats://[TOKEN@]HOST:PORT", "listen", cfg.Listen, "url", natsURL)
	}
	err = n.connect(ctx, natsURL)
	if err == nil {
		err = n.forgetPrevious(ctx)
	}
	if err == nil {
		err = n.forgetShares(ctx)
	}
	if err == nil {
		if err = n.beat(ctx); err != nil {
			err = fmt.Errorf("cluster: first heartbeat: %w", err)
		}
	}
	if err != nil {
		n.disconnect()
		return nil, err
	}
	go n.heartbeats()
	return n, nil
}

// connect connects to NATS at url and opens the buckets.
func (n *Node) connect(ctx context.Context, url string) error {
	opts := []nats.Option{nats.Name("crucible " + n.cfg.NodeID), nats.Timeout(opTimeout),
		nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		// No buffer while disconnected: a put must fail at once, not
		// wait in memory, so that the node knows it cannot report.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { n.log.Warn("lost the connection to NATS; reconnecting", "err", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { n.log.Info("reconnected to NATS", "url", c.ConnectedUrlRedacted()) })}
	if n.cfg.Token != "" && n.embed != nil {
		opts = append(opts, nats.Token(n.cfg.Token))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return fmt.Errorf("cluster: connect to NATS at %s: %w", redactURL(url), err)
	}
	n.nc = nc
	return n.openBuckets(ctx)
}

// openBuckets opens the buckets, creating them if need be: at Join, and
// again when a heartbeat fails while connected, since a NATS server that
// restarted has lost the nodes bucket, which it held in memory.
func (n *Node) openBuckets(ctx context.Context) error {
	js, err := jetstream.New(n.nc)
	if err != nil {
		return fmt.Errorf("cluster: JetStream: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nodes, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: NodesBucket, TTL: n.cfg.ttl,
		Storage: jetstream.MemoryStorage, Description: "Crucible nodes: id → NodeInfo, kept alive by heartbeats"})
	if err != nil {
		return fmt.Errorf("cluster: bucket %s (is JetStream on? nats-server -js): %w", NodesBucket, err)
	}
	owners, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: OwnersBucket,
		Storage: jetstream.FileStorage, Description: "Crucible sessions: id → owning node and tenant"})
	if err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", OwnersBucket, err)
	}
	shares, err := sharesBucket(ctx, js)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.kv = kvs{nodes: nodes, owners: owners, shares: shares}
	n.mu.Unlock()
	return nil
}

// kvs are the cluster's buckets.
type kvs struct{ nodes, owners, shares jetstream.KeyValue }

// buckets returns the buckets as last opened.
func (n *Node) buckets() kvs {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kv
}

// forgetPrevious deletes the catalog entries that name this node: they
// are sessions of a previous process under the same id, and died with it.
func (n *Node) forgetPrevious(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if e, err := n.buckets().nodes.Get(ctx, n.cfg.NodeID); err == nil {
		n.log.Warn("a node of this id was alive moments ago; taking its place (its sessions are gone)", "last_heartbeat", e.Created())
	}
	w, err := n.buckets().owners.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("cluster: read %s: %w", OwnersBucket, err)
	}
	defer w.Stop()
	var stale []string
	for e := range w.Updates() {
		if e == nil { // the end of the entries already there
			break
		}
		var o owner
		if json.Unmarshal(e.Value(), &o) == nil && o.Node == n.cfg.NodeID {
			stale = append(stale, e.Key())
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("cluster: read %s: %w", OwnersBucket, ctx.Err())
	}
	for _, id := range stale {
		if err := n.buckets().owners.Delete(ctx, id); err != nil {
			return fmt.Errorf("cluster: forget session %s of a previous process: %w", id, err)
		}
	}
	if len(stale) > 0 {
		n.log.Info("forgot the sessions a previous process of this node held", "count", len(stale))
	}
	return nil
}

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Close leaves the cluster: the heartbeats stop, the node's entry is
// deleted (the others see it down at once) and so are those of the
// sessions still recorded here, then the connection and the embedded
// server, if any, close.
func (n *Node) Close() error {
	select {
	case <-n.stop:
		return nil
	default:
	}
	close(n.stop)
	<-n.done
	{
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		_ = n.buckets().nodes.Delete(ctx, n.cfg.NodeID)
		n.mu.Lock()
		ids := make([]string, 0, len(n.local))
		for id := range n.local {
			ids = append(ids, id)
		}
		n.mu.Unlock()
		for _, id := range ids {
			_ = n.buckets().owners.Delete(ctx, id)
		}
	}
	return n.disconnect()
}

// disconnect closes the connection to NATS and stops the embedded server,
// if any.
func (n *Node) disconnect() error {
	var err error
	if n.nc != nil {
		err = n.nc.Drain()
		for n.nc.IsDraining() {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if n.embed != nil {
		n.embed.Shutdown()
		n.embed.WaitForShutdown()
	}
	return err
}

// redactURL hides the credentials of a NATS URL, for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("***")
	return u.String()
}
