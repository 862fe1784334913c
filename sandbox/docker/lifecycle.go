package docker

import (
	"context"

	"github.com/docker/docker/api/types/container"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// startContainer creates a container for a run of limits lim (labelled as
// a pool's if pooled), starts its waiting process and limits its socket
// buffers; it returns the container's id and its cgroup directories when
// this host has them (sockmem.go). A container that fails to start is
// removed.
func (r *Runtime) startContainer(ctx context.Context, lim sandbox.Limits, pooled bool) (string, cgroupDirs, error) {
	hc := r.hostConfig(lim)
	if r.ociRuntime == RuncRuntime {
		// gVisor's own kernel makes up these files itself.
		kv, err := r.kernelViewMounts(ctx, lim.MemoryBytes)
		if err != nil {
			return "", cgroupDirs{}, &sandbox.PlatformError{Op: "kernel view", Err: err}
		}
		hc.Mounts = append(hc.Mounts, kv...)
	}
	created, err := r.cli.ContainerCreate(ctx, r.containerConfig(pooled), hc, nil, nil, "")
	if err != nil {
		return "", cgroupDirs{}, &sandbox.PlatformError{Op: "create container", Err: err}
	}
	fail := func(op string, err error) (string, cgroupDirs, error) {
		_ = r.removeContainer(created.ID)
		return "", cgroupDirs{}, &sandbox.PlatformError{Op: op, Err: err}
	}
	if err := r.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return fail("start container", err)
	}
	cg, err := r.localCgroups(ctx, created.ID)
	if err != nil {
		return fail("container cgroups", err)
	}
	if err := limitSocketMemory(cg, lim.MemoryBytes); err != nil {
		return fail("socket memory limit", err)
	}
	return created.ID, cg, nil
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

// box is a started container a run holds and the uid its program runs
// as. A pooled one also has the host's ends of its waiting process (the
// agent) and of the program's launcher, both started when the pool made
// it; a cold one has neither.
type box struct {
	id     string
	cg     cgroupDirs // the container's cgroup v1 directories, when this host has them
	uid    int
	agent  *agent
	launch *launcher
}

// close ends the host's attachments to a pooled container's processes.
func (b *box) close() {
	if b.agent != nil {
		b.agent.close()
	}
	if b.launch != nil {
		b.launch.conn.Close()
	}
}

// acquire returns a started container for a run of limits lim, and its
// uid: a pooled one if the pool has one ready that fits, else one made
// now.
func (r *Runtime) acquire(ctx context.Context, lim sandbox.Limits) (*box, error) {
	if r.pool != nil {
		if b, ok := r.pool.take(lim); ok {
			return b, nil
		}
	}
	return r.acquireCold(ctx, lim)
}

// acquireCold makes a started container for a run of limits lim, with a
// uid of its own.
func (r *Runtime) acquireCold(ctx context.Context, lim sandbox.Limits) (*box, error) {
	uid, err := r.uids.Take()
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "allocate uid", Err: err}
	}
	id, cg, err := r.startContainer(ctx, lim, false)
	if err != nil {
		r.uids.Give(uid)
		return nil, err
	}
	return &box{id: id, cg: cg, uid: uid}, nil
}

// release removes a run's container and then frees its uid: a pooled
// run's in the background (the pool's Close waits for it), a cold run's
// before Run returns, as a one-shot caller expects.
func (r *Runtime) release(b *box) error {
	if b.agent != nil {
		r.pool.retire(b)
		return nil
	}
	err := r.removeContainer(b.id)
	r.uids.Give(b.uid)
	return err
}

// SettlePool waits until the pool (Options.Prestart) holds every
// container it keeps ready and is neither making nor removing one, or
// until ctx is done: a benchmark's rest between timed runs. Without a
// pool it returns at once.
func (r *Runtime) SettlePool(ctx context.Context) error {
	if r.pool == nil {
		return nil
	}
	return r.pool.settle(ctx)
}
