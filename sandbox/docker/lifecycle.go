package docker

import (
	"context"

	"github.com/docker/docker/api/types/container"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// startContainer creates a container for a run of limits lim (labelled as
// a pool's if pooled) and starts its waiting process. A container that
// fails to start is removed.
func (r *Runtime) startContainer(ctx context.Context, lim sandbox.Limits, pooled bool) (string, error) {
	created, err := r.cli.ContainerCreate(ctx, r.containerConfig(pooled), r.hostConfig(lim), nil, nil, "")
	if err != nil {
		return "", &sandbox.PlatformError{Op: "create container", Err: err}
	}
	if err := r.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		_ = r.removeContainer(created.ID)
		return "", &sandbox.PlatformError{Op: "start container", Err: err}
	}
	return created.ID, nil
}

// removeContainer kills and removes container id with its volumes. It is
// not bound to any caller's context: nothing of a run may remain because
// the run was cancelled.
func (r *Runtime) removeContainer(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := r.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		return &sandbox.PlatformError{Op: "remove container", Err: err}
	}
	return nil
}

// acquire returns a started container for a run of limits lim: a pooled
// one, with its waiting process's agent, if the pool has one ready that
// fits, else one made now (and a nil agent).
func (r *Runtime) acquire(ctx context.Context, lim sandbox.Limits) (string, *agent, error) {
	if r.pool != nil {
		if c, ok := r.pool.take(lim); ok {
			return c.id, c.agent, nil
		}
	}
	id, err := r.startContainer(ctx, lim, false)
	return id, nil, err
}

// release removes a run's container and then returns its uid: a pooled
// run's in the background (the pool's Close waits for it), a cold run's
// before Run returns, as a one-shot caller expects.
func (r *Runtime) release(id string, a *agent, uid int) error {
	if a != nil {
		a.close()
		r.pool.retire(id, func() { r.uids.put(uid) })
		return nil
	}
	err := r.removeContainer(id)
	r.uids.put(uid)
	return err
}
