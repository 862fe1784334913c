package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/crucible-sandbox/crucible/sandbox/procview"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// The program's /proc/meminfo and /proc/stat. A container's /proc is the
// host kernel's: both files would show the host's memory and CPU counters
// (how busy the machine is, how many processes it has forked), which the
// native sandbox hides behind its own versions. Masking them (an empty
// file) would break the programs that read them (free, nproc without
// /sys, Node's os.cpus()), so each container gets the native sandbox's
// made-up versions instead: the memory limit as the machine's memory, one
// processor line per CPU the container may run on, every counter zero.
//
// They are bound read-only over their /proc namesakes (runc allows a bind
// over exactly these files, for LXCFS). The bound files live in a volume of
// the daemon's, kernelViewVolume, one file per content (named after what
// it depends on, so equal names hold equal bytes), written once through a
// stopped helper container's archive upload: nothing of the host is
// mounted, and the same works for a daemon on another machine.

// kernelViewVolume is the daemon's volume that holds the files. It is
// shared by every process of every Runtime and kept between them (a few
// hundred bytes per distinct memory limit); it does not carry the run
// labels, so it is never swept.
const kernelViewVolume = "crucible-kernelview"

// kernelView writes and remembers the files of kernelViewVolume.
type kernelView struct {
	mu         sync.Mutex
	mountpoint string          // the volume's directory on the daemon's host
	written    map[string]bool // files known to be in the volume
}

// mounts returns the read-only binds of a container with memoryBytes of
// memory, writing the files the volume lacks.
func (r *Runtime) kernelViewMounts(ctx context.Context, memoryBytes int64) ([]mount.Mount, error) {
	meminfo := "meminfo-" + strconv.FormatInt(memoryBytes, 10)
	btime := hostBootTime()
	// The container may run on every processor of the daemon's host (its
	// CPU limit is a rate, not a set): Node's os.cpus() counts these lines.
	stat := "stat-" + strconv.Itoa(r.ncpu) + "-" + btime
	files := map[string]string{
		meminfo: procview.Meminfo(memoryBytes),
		stat:    procview.Stat(r.ncpu, btime),
	}
	dir, err := r.kv.ensure(ctx, r.cli, r.image, files)
	if err != nil {
		return nil, fmt.Errorf("the sandbox's /proc/meminfo and /proc/stat: %w", err)
	}
	return []mount.Mount{
		{Type: mount.TypeBind, Source: path.Join(dir, meminfo), Target: "/proc/meminfo", ReadOnly: true},
		{Type: mount.TypeBind, Source: path.Join(dir, stat), Target: "/proc/stat", ReadOnly: true},
	}, nil
}

// ensure makes sure the volume holds files (name to content) and returns
// its directory on the daemon's host.
func (kv *kernelView) ensure(ctx context.Context, cli *client.Client, image string, files map[string]string) (string, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if kv.mountpoint == "" {
		v, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: kernelViewVolume, Driver: "local",
			Labels: map[string]string{"org.crucible.kernelview": "1"}})
		if err != nil {
			return "", fmt.Errorf("create volume %s: %w", kernelViewVolume, err)
		}
		if v.Mountpoint == "" {
			return "", fmt.Errorf("volume %s has no mount point", kernelViewVolume)
		}
		kv.mountpoint, kv.written = v.Mountpoint, map[string]bool{}
	}
	var missing []string
	for name := range files {
		if !kv.written[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return kv.mountpoint, nil
	}
	// A container that never starts, with the volume at /v: the archive
	// upload writes into it.
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Cmd: []string{"true"}, Labels: runLabels(), NetworkDisabled: true},
		&container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"},
			Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: kernelViewVolume, Target: "/v"}}}, nil, nil, "")
	if err != nil {
		return "", fmt.Errorf("create the helper container: %w", err)
	}
	defer func() {
		_ = cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range missing {
		// Another process may have written it: equal names hold equal
		// bytes, and a file is never rewritten under a running container.
		if _, err := cli.ContainerStatPath(ctx, c.ID, "/v/"+name); err == nil {
			continue
		} else if !cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("look for %s in volume %s: %w", name, kernelViewVolume, err)
		}
		content := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o444, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			return "", err
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := cli.CopyToContainer(ctx, c.ID, "/v", &buf, container.CopyToContainerOptions{}); err != nil {
		return "", fmt.Errorf("write volume %s: %w", kernelViewVolume, err)
	}
	for _, name := range missing {
		kv.written[name] = true
	}
	return kv.mountpoint, nil
}

// hostBootTime is the btime of this host's /proc/stat, or "0" when it
// cannot be read (then ps shows start times from 1970, nothing worse).
func hostBootTime() string {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return "0"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			return strings.TrimSpace(v)
		}
	}
	return "0"
}
