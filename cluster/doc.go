// Package cluster joins a Crucible server to other nodes through NATS
// JetStream: a registry of live nodes (a key-value bucket whose entries
// expire unless their node's heartbeat renews them), a catalog of which
// node holds each session (another bucket), and the forwarding of a
// request for a session to the node that holds it.
//
// Every node shares one Postgres store (run records, keys), so any node
// authenticates any key; NATS holds only what lives as long as a node
// does. A session lives in one node's memory and dies with it: through
// any other node it then answers "gone" (410), and a node that comes back
// under the same id forgets the sessions it held (Join). A node that has
// not reached NATS for longer than NodeTTL refuses new sessions, which it
// could not report (Node.Admit), until it reaches it again.
//
// Tenants' quotas hold across the nodes (Node.Acquire, shares.go): each
// node's count of a tenant's runs, sessions and agent runs is in a third
// bucket, written with compare-and-set; the counts of a node that is not
// alive do not count.
//
// Not here yet: queueing stateless runs across nodes, forwarding
// analyses and agent runs (docs/cluster.md).
package cluster
