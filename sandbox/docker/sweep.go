package docker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// ownerKey labels every container and volume of a run with the process
// that created it, as "<boot id>/<pid>/<start time>": the boot id of the
// host's kernel, the pid, and the process's start time in clock ticks
// since boot (/proc/<pid>/stat), so that a later process that got the
// same pid is not taken for it.
const ownerKey = "org.crucible.owner"

var self struct {
	once sync.Once
	id   string
}

// selfOwner is this process's owner label.
func selfOwner() string {
	self.once.Do(func() { self.id = ownerOf(os.Getpid()) })
	return self.id
}

// ownerOf returns the owner label of the live process pid, or "" when it
// is gone.
func ownerOf(pid int) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	start := startTime(pid)
	if start == "" {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + strconv.Itoa(pid) + "/" + start
}

// startTime returns field 22 of /proc/pid/stat (the start time), or "".
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name in parentheses may hold spaces; the fields after
	// it start with the state (field 3).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ownerGone reports whether the process an owner label names has ended:
// it was on this host's current boot, and no process with its pid and
// start time lives. A label of another boot or another host (a daemon
// shared between machines) is never taken for a gone process: this host
// cannot tell.
func ownerGone(label string) bool {
	parts := strings.Split(label, "/")
	if len(parts) != 3 {
		return false
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil || strings.TrimSpace(string(boot)) != parts[0] {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	return startTime(pid) != parts[2]
}

// sweep removes the containers and volumes that runs of a process that has
// ended left behind (it crashed, or was killed, before removing them),
// with their volumes. Those of live processes, this one's included, are
// left alone: they may be runs in progress.
func sweep(ctx context.Context, cli *client.Client) error {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", labelKey+"=1"))})
	if err != nil {
		return fmt.Errorf("list leftover containers: %w", err)
	}
	for _, c := range list {
		if !ownerGone(c.Labels[ownerKey]) {
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("remove leftover container %.12s: %w", c.ID, err)
		}
	}
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", labelKey+"=1"))})
	if err != nil {
		return fmt.Errorf("list leftover volumes: %w", err)
	}
	for _, v := range vols.Volumes {
		if !ownerGone(v.Labels[ownerKey]) {
			continue
		}
		if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("remove leftover volume %s: %w", v.Name, err)
		}
	}
	return nil
}

// Owned lists the containers and volumes of this process's runs that the
// daemon cli talks to holds now, as "container ID (state)" and "volume
// NAME": none once every run has returned. The conformance suite's host
// check calls it after each run.
func Owned(ctx context.Context, cli *client.Client) ([]string, error) {
	own := filters.NewArgs(filters.Arg("label", labelKey+"=1"), filters.Arg("label", ownerKey+"="+selfOwner()))
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: own})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range list {
		out = append(out, "container "+c.ID+" ("+c.State+")")
	}
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: own})
	if err != nil {
		return nil, err
	}
	for _, v := range vols.Volumes {
		out = append(out, "volume "+v.Name)
	}
	return out, nil
}

// WatchCreated starts watching the daemon cli talks to for containers this
// process's runs create, and returns a function that lists, as container
// IDs, those created since the watch began (from the daemon's event log,
// so that one made and removed again at once is still seen), and a
// function that ends the watch.
func WatchCreated(ctx context.Context, cli *client.Client) (created func() []string, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	now := time.Now()
	since := fmt.Sprintf("%d.%09d", now.Unix(), now.Nanosecond())
	msgs, errs := cli.Events(ctx, events.ListOptions{Since: since, Filters: filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)), filters.Arg("event", string(events.ActionCreate)),
		filters.Arg("label", ownerKey+"="+selfOwner()))})
	var mu sync.Mutex
	var ids []string
	var failed error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m := <-msgs:
				mu.Lock()
				ids = append(ids, m.Actor.ID)
				mu.Unlock()
			case err := <-errs:
				mu.Lock()
				if ctx.Err() == nil {
					failed = err
				}
				mu.Unlock()
				return
			}
		}
	}()
	created = func() []string {
		// The daemon sends an event as it happens: a moment lets the last
		// ones arrive.
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(ids)
		if failed != nil {
			out = append(out, "(the event watch failed: "+failed.Error()+")")
		}
		return out
	}
	return created, func() { cancel(); <-done }
}
