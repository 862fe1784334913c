package docker

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// poolLabel marks a pooled container with its owner, the process that
// made it: "HOST/PID/START", START being the process's start time in
// clock ticks since boot (/proc/PID/stat's 22nd field), so that a pid
// reused by another process is not taken for the owner. A process that
// crashed leaves its ready containers behind; SweepPools finds them by this
// label.
const poolLabel = "org.crucible.pool"

// poolOwner is this process's value of poolLabel.
var poolOwner = ownerOf(os.Getpid())

// ownerOf returns the poolLabel value of the live process pid, or "" if
// there is none.
func ownerOf(pid int) string {
	host, _ := os.Hostname()
	start, err := startTime(pid)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s/%d/%s", host, pid, start)
}

// startTime is the start time of process pid, from /proc/PID/stat.
func startTime(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	// The command's name, in parentheses, may hold spaces and parentheses:
	// the fields are counted after its last ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: %d fields after the name, want at least 20", pid, len(fields))
	}
	return fields[19], nil // field 22: fields[0] is field 3
}

// ownerGone reports whether owner, a poolLabel value, names a process of
// this host that no longer runs. An owner of another host (a daemon
// reached over the network serves several) is never gone: only its host
// can tell.
func ownerGone(owner string) bool {
	host, _ := os.Hostname()
	parts := strings.Split(owner, "/")
	if len(parts) != 3 || parts[0] != host {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	return ownerOf(pid) != owner
}

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
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !client.IsErrNotFound(err) {
			return n, fmt.Errorf("remove pooled container %s of a process gone (%s): %w", c.ID, c.Labels[poolLabel], err)
		}
		n++
	}
	return n, nil
}
