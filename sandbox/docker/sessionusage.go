package docker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// hostCgroup names the files of a container's cgroup (v1) that hold its
// CPU time and peak memory use, when the host can read them: a daemon on
// this host with cgroup v1. Reading them takes microseconds, where the
// daemon's statistics take milliseconds to a second: a cell's metrics are
// then exact, read at its end, and its CPU-time limit is checked cheaply.
// Elsewhere (a remote daemon, cgroup v2) the daemon's statistics serve.
type hostCgroup struct {
	cpu, peak string
}

// cgroupRoot is where the host mounts its cgroup v1 hierarchies.
const cgroupRoot = "/sys/fs/cgroup"

// findHostCgroup returns the cgroup files of the container whose first
// process is host process pid, or nil when they cannot be read here. The
// container cannot choose its cgroup: its /sys/fs/cgroup is read-only and
// its processes hold no capability.
func findHostCgroup(pid int) *hostCgroup {
	if pid <= 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil
	}
	var cg hostCgroup
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || strings.Contains(f[2], "..") {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			switch c {
			case "cpuacct":
				cg.cpu = filepath.Join(cgroupRoot, "cpuacct", f[2], "cpuacct.usage")
			case "memory":
				cg.peak = filepath.Join(cgroupRoot, "memory", f[2], "memory.max_usage_in_bytes")
			}
		}
	}
	if cg.cpu == "" || cg.peak == "" {
		return nil
	}
	if _, _, err := cg.read(); err != nil {
		return nil
	}
	return &cg
}

// read returns the cgroup's CPU time (ns) and peak memory use (bytes).
func (cg *hostCgroup) read() (cpu, peak int64, err error) {
	if cpu, err = readInt(cg.cpu); err != nil {
		return 0, 0, err
	}
	peak, err = readInt(cg.peak)
	return cpu, peak, err
}

// usage returns the session's CPU time so far (ns) and peak memory use,
// from the host's cgroup files when it can read them, else from the
// daemon's statistics.
func (s *Session) usage(ctx context.Context) (cpu, peak int64, err error) {
	if s.cg != nil {
		if cpu, peak, err = s.cg.read(); err == nil {
			return cpu, peak, nil
		}
	}
	return s.rt.usage(ctx, s.cid)
}
