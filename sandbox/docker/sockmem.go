package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Socket buffers and the memory limit. Cgroup v1 charges a container's
// socket buffers to memory.kmem.tcp, apart from its memory limit, and only
// once memory.kmem.tcp.limit_in_bytes was written: without it, loopback
// connections whose receiver never reads hold any amount of host memory
// (the conformance suite's SocketMemory saw 490 MiB under a 128 MiB
// limit). The HostConfig asks for the limit (KernelMemoryTCP), but runc
// 1.1, Docker 20.10's, no longer writes it; so the runtime writes it
// itself, from the host, after the container started and before the
// program runs (the kernel charges the sockets created while the limit is
// set: the waiting process and docker-init make none). Cgroup v2 charges
// socket buffers to the memory limit itself, and gVisor keeps them in its
// own kernel's memory, which the limit covers: neither needs this.

// socketMemoryFor is the native runtime's limit on a run's socket buffers
// (sandbox/linux socketMemoryFor): a quarter of the memory limit.
func socketMemoryFor(memoryBytes int64) int64 { return memoryBytes / 4 }

// cgroupV1Root is where the host mounts cgroup v1's hierarchies.
const cgroupV1Root = "/sys/fs/cgroup"

// cgroupDirs are a running container's cgroup v1 directories on this
// host: memory and cpuacct. Both are empty under gVisor and cgroup v2.
type cgroupDirs struct{ memory, cpuacct string }

// localCgroups finds the cgroup v1 directories of the running container
// id under runc. It fails when this process cannot reach them, as from
// another machine or without root: the run would otherwise go without
// the socket-buffer wall.
func (r *Runtime) localCgroups(ctx context.Context, id string) (cgroupDirs, error) {
	if !r.cgroupV1 || r.ociRuntime != RuncRuntime {
		return cgroupDirs{}, nil
	}
	ins, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return cgroupDirs{}, err
	}
	if ins.State == nil || ins.State.Pid <= 0 {
		return cgroupDirs{}, errors.New("the container has no running process")
	}
	var dirs cgroupDirs
	for _, c := range []struct {
		name string
		dir  *string
	}{{"memory", &dirs.memory}, {"cpuacct", &dirs.cpuacct}} {
		if *c.dir, err = cgroupV1Dir(ins.State.Pid, c.name); err != nil {
			return cgroupDirs{}, fmt.Errorf("the container's %s cgroup (the daemon runs cgroup v1, whose socket buffers only a limit this process writes bounds; run it as root on the daemon's host): %w", c.name, err)
		}
	}
	return dirs, nil
}

// limitSocketMemory writes the socket-buffer limit of a container whose
// cgroups are dirs (none: nothing to do).
func limitSocketMemory(dirs cgroupDirs, memoryBytes int64) error {
	if dirs.memory == "" {
		return nil
	}
	file := filepath.Join(dirs.memory, "memory.kmem.tcp.limit_in_bytes")
	if err := os.WriteFile(file, []byte(strconv.FormatInt(socketMemoryFor(memoryBytes), 10)), 0); err != nil {
		return fmt.Errorf("limit the container's socket buffers: %w", err)
	}
	return nil
}

// cgroupV1Dir returns the cgroup v1 directory of process pid in the
// hierarchy of controller.
func cgroupV1Dir(pid int, controller string) (string, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		cs := strings.Split(parts[1], ",")
		for _, c := range cs {
			if c == controller {
				dir := filepath.Join(cgroupV1Root, strings.Join(cs, ","), filepath.Clean("/"+parts[2]))
				if _, err := os.Stat(dir); err != nil {
					// A co-mounted hierarchy is also linked under each
					// controller's own name (cpu,cpuacct as cpuacct).
					dir = filepath.Join(cgroupV1Root, controller, filepath.Clean("/"+parts[2]))
					if _, err := os.Stat(dir); err != nil {
						return "", err
					}
				}
				return dir, nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("process %d is in no cgroup v1 %s hierarchy", pid, controller)
}
