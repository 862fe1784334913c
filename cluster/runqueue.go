package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RunsStream is the JetStream work queue of the runs a node queued for
// any node to execute: subjects crucible.runs.<image>, one durable pull
// consumer per image that every node offering it pulls from, so that a
// message goes to one node, and leaves the stream once acknowledged.
const RunsStream = "CRUCIBLE_RUNS"

// RunAckWait is how long a pulled run may stay unacknowledged before
// JetStream gives it to another node: a node acknowledges a run before
// it starts it, so a run whose node died between pulling and starting is
// run by another after this long.
const RunAckWait = NodeTTL

// jobHeadroom is kept free of a message's size for its headers.
const jobHeadroom = 1 << 10

// RunQueue is the cluster's queue of stateless runs, as the service uses
// it (service.RunQueue). Create it with Node.RunQueue.
type RunQueue struct {
	n         *Node
	js        jetstream.JetStream
	stream    jetstream.Stream
	consumers map[string]jetstream.Consumer // by image
	ackWait   time.Duration
}

// tokenRE matches an image name usable as a subject token and in a
// consumer's name as it is.
var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// imageToken is image as a subject token: itself, or "x" and its hex
// when it holds other characters (a '.' would split the subject).
func imageToken(image string) string {
	if tokenRE.MatchString(image) {
		return image
	}
	return "x" + hex.EncodeToString([]byte(image))
}

// runSubject is the subject of image's queued runs.
func runSubject(image string) string { return "crucible.runs." + imageToken(image) }

// eventsSubject carries run id's events from its executor to its front.
func eventsSubject(id string) string { return "crucible.run." + id + ".events" }

// cancelSubject carries the front's cancel of run id to its executor.
func cancelSubject(id string) string { return "crucible.run." + id + ".cancel" }

// RunQueue opens the work queue of runs (creating the stream if need be)
// and a consumer for each of images, those this node executes.
func (n *Node) RunQueue(ctx context.Context, images []string) (*RunQueue, error) {
	return n.runQueue(ctx, images, RunAckWait)
}

func (n *Node) runQueue(ctx context.Context, images []string, ackWait time.Duration) (*RunQueue, error) {
	js, err := jetstream.New(n.nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: JetStream: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q := &RunQueue{n: n, js: js, consumers: map[string]jetstream.Consumer{}, ackWait: ackWait}
	q.stream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: RunsStream, Subjects: []string{"crucible.runs.>"},
		Description: "Crucible stateless runs waiting for a node with a free slot",
		Retention:   jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, MaxMsgSize: int32(q.MaxJob())})
	if err != nil {
		return nil, fmt.Errorf("cluster: stream %s: %w", RunsStream, err)
	}
	for _, img := range images {
		c, err := q.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "runs-" + imageToken(img),
			Description: "the nodes offering image " + img, FilterSubject: runSubject(img),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxWaiting: 4096})
		if err != nil {
			return nil, fmt.Errorf("cluster: consumer of image %s: %w", img, err)
		}
		q.consumers[img] = c
	}
	return q, nil
}

// NodeID returns this node's id.
func (q *RunQueue) NodeID() string { return q.n.cfg.NodeID }

// Admit returns nil while this node reaches the cluster (Node.Admit): a
// node cut off neither queues runs nor pulls them, since it could not
// report them.
func (q *RunQueue) Admit() error { return q.n.Admit() }

// MaxJob is the largest encoded run the queue carries: the NATS server's
// maximum payload less room for headers.
func (q *RunQueue) MaxJob() int { return int(q.n.nc.MaxPayload()) - jobHeadroom }

// Enqueue subscribes to run id's events, passing each to events in order
// (from the subscription's goroutine), then queues job on image's queue.
// stop ends the subscription; call it once the run ended.
func (q *RunQueue) Enqueue(ctx context.Context, image, id string, job []byte, events func([]byte)) (stop func(), err error) {
	if len(job) > q.MaxJob() {
		return nil, fmt.Errorf("cluster: the run is %d bytes encoded, over the queue's limit of %d", len(job), q.MaxJob())
	}
	sub, err := q.n.nc.Subscribe(eventsSubject(id), func(m *nats.Msg) {
		events(m.Data)
		if m.Reply != "" {
			_ = m.Respond(nil)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: subscribe to run %s's events: %w", id, err)
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := q.js.Publish(ctx, runSubject(image), job); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("cluster: queue run %s: %w", id, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// Cancel asks the node that executes run id to kill it; it fails when no
// node answers (the run has not started, or its node is gone).
func (q *RunQueue) Cancel(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := q.n.nc.RequestWithContext(ctx, cancelSubject(id), nil)
	return err
}

// Alive reports whether node has a live entry in the registry.
func (q *RunQueue) Alive(ctx context.Context, node string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := q.n.getNode(ctx, node)
	if errors.Is(err, errNodeDown) {
		return false, nil
	}
	return err == nil, err
}

// Take waits up to wait for one run of image and returns it (as its
// front encoded it), nil when none came. The run stays this node's for
// the queue's ack wait: call start, which acknowledges it and waits for
// JetStream to confirm, before running it (a run whose start fails must
// not run), or giveBack, which returns it to the queue at once for
// another node.
func (q *RunQueue) Take(image string, wait time.Duration) (job []byte, start func(context.Context) error, giveBack func(), err error) {
	c, ok := q.consumers[image]
	if !ok {
		return nil, nil, nil, fmt.Errorf("cluster: this node has no queue of image %q", image)
	}
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(wait))
	if err != nil {
		return nil, nil, nil, err
	}
	for m := range batch.Messages() {
		start = func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, opTimeout)
			defer cancel()
			return m.DoubleAck(ctx)
		}
		return m.Data(), start, func() { _ = m.Nak() }, nil
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		return nil, nil, nil, err
	}
	return nil, nil, nil, nil
}

// OnCancel calls cancel when the run's front asks to kill it, until
// stop is called. The subscription is in place at the server once a
// later request on the node's connection has been answered (NATS keeps
// a connection's order): the executor's acknowledgement of the run,
// which it waits for before the program starts.
func (q *RunQueue) OnCancel(id string, cancel func()) (stop func(), err error) {
	sub, err := q.n.nc.Subscribe(cancelSubject(id), func(m *nats.Msg) {
		cancel()
		_ = m.Respond(nil)
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: subscribe to run %s's cancel: %w", id, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// Publish sends one of run id's events to its front, at most once (core
// NATS): an output chunk, which the result repeats.
func (q *RunQueue) Publish(id string, event []byte) {
	_ = q.n.nc.Publish(eventsSubject(id), event)
}

// Deliver sends run id's last event to its front and waits for its
// answer, trying again for a few seconds; it fails when the front is gone
// (the result is in the record anyway).
func (q *RunQueue) Deliver(id string, event []byte) error {
	var err error
	for try := 0; try < 3; try++ {
		_, err = q.n.nc.Request(eventsSubject(id), event, opTimeout)
		if err == nil || errors.Is(err, nats.ErrNoResponders) {
			return err
		}
	}
	return err
}
