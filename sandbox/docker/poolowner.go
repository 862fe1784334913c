package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// poolLabel marks a pooled container with its owner, the process that
// made it, as ownerKey does a run's (sweep.go: boot id, pid and start
// time). A process that crashed leaves its ready containers behind;
// SweepPools finds them by this label.
const poolLabel = "org.crucible.pool"

// poolOwner is this process's value of poolLabel.
var poolOwner = selfOwner()

// SweepPools removes the pooled containers (and their volumes) whose
// owner process, on this host, no longer runs: what a crashed process's
// pools left. It returns how many it removed. New calls it for a Runtime
// with Options.Prestart.
func SweepPools(ctx context.Context, cli *client.Client) (int, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", poolLabel))})
	if err != nil {
		return 0, fmt.Errorf("list pooled containers: %w", err)
	}
	n := 0
	for _, c := range list {
		if !ownerGone(c.Labels[poolLabel]) {
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return n, fmt.Errorf("remove pooled container %s of a process gone (%s): %w", c.ID, c.Labels[poolLabel], err)
		}
		n++
	}
	return n, nil
}
