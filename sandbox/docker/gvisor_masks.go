package docker

import (
	"context"
	"fmt"
	"path"

	"github.com/docker/docker/api/types/mount"
)

// runsc drops a container's masked paths (maskedPaths in the OCI spec;
// HostConfig.MaskedPaths here): a gvisor program's /proc is the sentry's
// own, made up, not the host's, so most of what runc masks does not exist
// there or tells nothing of the host. What the sentry does show is bound
// over with an empty file of kernelViewVolume, as runc masks it, where
// its content could be taken for the host's.

// gvisorEmpty is the empty file of kernelViewVolume bound over them.
const gvisorEmpty = "empty"

// gvisorMasked are the /proc files of the sentry's that are masked:
// /proc/cgroups lists the sentry's own cgroup controllers with their
// hierarchy numbers and counts, lines a host of few cgroups can show word
// for word (the conformance suite's KernelView saw "cpuset 3 2 1" on both).
var gvisorMasked = []string{"/proc/cgroups"}

// gvisorMasks returns the read-only binds of the empty file over
// gvisorMasked, writing the file into the volume if it is not there.
func (r *Runtime) gvisorMasks(ctx context.Context) ([]mount.Mount, error) {
	dir, err := r.kv.ensure(ctx, r.cli, r.image, map[string]string{gvisorEmpty: ""})
	if err != nil {
		return nil, fmt.Errorf("the sandbox's masked /proc files: %w", err)
	}
	var m []mount.Mount
	for _, p := range gvisorMasked {
		m = append(m, mount.Mount{Type: mount.TypeBind, Source: path.Join(dir, gvisorEmpty), Target: p, ReadOnly: true})
	}
	return m, nil
}
