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

// cgroupV1Memory is where the host mounts cgroup v1's memory hierarchy.
const cgroupV1Memory = "/sys/fs/cgroup/memory"

// limitSocketMemory writes the socket-buffer limit of the running
// container id under a cgroup v1 daemon. It fails (and the run with it)
// when this process cannot reach the container's cgroup, as from another
// machine or without root: the run would otherwise go without the wall.
func (r *Runtime) limitSocketMemory(ctx context.Context, id string, memoryBytes int64) error {
	if !r.cgroupV1 || r.ociRuntime != RuncRuntime {
		return nil
	}
	ins, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return err
	}
	if ins.State == nil || ins.State.Pid <= 0 {
		return errors.New("the container has no running process")
	}
	dir, err := memoryCgroup(ins.State.Pid)
	if err != nil {
		return fmt.Errorf("the container's memory cgroup (the daemon runs cgroup v1, whose socket buffers only a limit this process writes bounds; run it as root on the daemon's host): %w", err)
	}
	file := filepath.Join(dir, "memory.kmem.tcp.limit_in_bytes")
	if err := os.WriteFile(file, []byte(strconv.FormatInt(socketMemoryFor(memoryBytes), 10)), 0); err != nil {
		return fmt.Errorf("limit the container's socket buffers: %w", err)
	}
	return nil
}

// memoryCgroup returns the cgroup v1 memory directory of process pid.
func memoryCgroup(pid int) (string, error) {
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
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				dir := filepath.Join(cgroupV1Memory, filepath.Clean("/"+parts[2]))
				if _, err := os.Stat(dir); err != nil {
					return "", err
				}
				return dir, nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("process %d is in no cgroup v1 memory hierarchy", pid)
}
