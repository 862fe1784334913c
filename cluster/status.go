package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Status connects to the NATS server at url, as an observer (it joins
// nothing), and returns the live nodes, in the order of their ids.
func Status(ctx context.Context, url string) ([]NodeInfo, error) {
	nc, err := nats.Connect(url, nats.Name("crucible cluster status"), nats.Timeout(opTimeout))
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to NATS at %s: %w", redactURL(url), err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, NodesBucket)
	if err != nil {
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, nil // no node ever joined (or none since NATS restarted)
		}
		return nil, fmt.Errorf("cluster: bucket %s: %w", NodesBucket, err)
	}
	return listNodes(ctx, kv)
}

// listNodes reads every live entry of the nodes bucket kv.
func listNodes(ctx context.Context, kv jetstream.KeyValue) ([]NodeInfo, error) {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("cluster: read %s: %w", NodesBucket, err)
	}
	defer w.Stop()
	var out []NodeInfo
	for e := range w.Updates() {
		if e == nil { // the end of the entries already there
			break
		}
		var info NodeInfo
		if err := json.Unmarshal(e.Value(), &info); err != nil {
			return nil, fmt.Errorf("cluster: node %s's entry: %w", e.Key(), err)
		}
		out = append(out, info)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b NodeInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
