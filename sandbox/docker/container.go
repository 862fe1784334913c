package docker

import (
	"fmt"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	units "github.com/docker/go-units"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// Fixed parts of every container.
const (
	// hostname is the name the program sees, the native sandbox's.
	hostname = "sandbox"
	// labelKey marks every container this package creates, so that one a
	// crashed process left can be found (docker ps --filter label=...).
	labelKey = "org.crucible.sandbox"
	// codeBytes is the size of /code's tmpfs: the program file alone.
	codeBytes = sandbox.MaxCodeBytes + 64<<10
	// pidsReserve is the pids limit's room for docker-init, the waiting
	// process and the program's launcher (launcher.go), which are not the
	// program's.
	pidsReserve = 3
	// gvisorThreads is the pids limit's room, under gVisor, for the host
	// threads of the sandbox's own kernel (the sentry) and file proxy (the
	// gofer), which the container's cgroup holds: the program's processes
	// are the sentry's tasks, not host processes, and its limit is the
	// nproc rlimit the sentry enforces.
	gvisorThreads = 256
	// cpus is the CPU share of one container, in CPUs: the rate it may
	// use, not the CPU-time limit.
	cpus = 1
)

// waitCmd is the container's main process: it waits, doing nothing, while
// the program runs in an exec beside it. sleep is in every image with
// coreutils.
var waitCmd = []string{"sleep", "infinity"}

// containerConfig returns the configuration of a run's container: the
// image, the waiting process and no environment of its own. A pooled
// container is labelled with its owner too (poolowner.go).
func (r *Runtime) containerConfig(pooled bool) *container.Config {
	// A run's container carries its owner process (sweep.go); a pooled
	// one its pool's owner instead (poolowner.go): the pool sweeps its
	// own, and an idle pooled container is not a run's leftover.
	labels, cmd := runLabels(), waitCmd
	if pooled {
		labels, cmd = map[string]string{labelKey: "1", poolLabel: poolOwner}, agentCmd
	}
	return &container.Config{
		Image: r.image,
		Cmd:   cmd,
		// A pooled container's waiting process talks to the host over
		// its stdin and stdout (agent.go).
		OpenStdin:    pooled,
		AttachStdin:  pooled,
		AttachStdout: pooled,
		AttachStderr: pooled,
		// docker-init and the waiting process run as root, without any
		// capability: the program, which runs as uid, cannot signal them
		// (killing PID 1 would end the container) nor touch their files.
		User:            "0:0",
		Hostname:        hostname,
		WorkingDir:      lang.WorkDir,
		Env:             []string{},
		NetworkDisabled: true,
		Labels:          labels,
	}
}

// hostConfig returns the isolation and the limits of a run's container.
// Each setting is a wall the native runtime has too:
func (r *Runtime) hostConfig(lim sandbox.Limits) *container.HostConfig {
	memory := lim.MemoryBytes
	cpuSeconds := cpuSeconds(lim)
	return &container.HostConfig{
		// No network at all: only a loopback interface (where a run with
		// an allowlist finds the egress proxy: egress.go).
		NetworkMode: "none",
		// The image cannot be changed; the only writable places are the
		// size-capped tmpfs below.
		ReadonlyRootfs: true,
		// docker-init as PID 1: it reaps the orphans a program leaves and
		// passes signals on; killing it ends the pid namespace.
		Init: new(true),
		// No capability: root in the container (there is none: the uid is
		// unprivileged) could not use any either.
		CapDrop: []string{"ALL"},
		// no-new-privileges: no setuid or file-capability binary can raise
		// the program's privileges; the seccomp profile is the native
		// runtime's system-call policy.
		SecurityOpt: []string{"no-new-privileges", "seccomp=" + r.seccomp},
		Runtime:     r.ociRuntime,
		// Memory: the same limit as swap, so none can be swapped out to
		// escape it; the OOM killer ends the program at the limit.
		Resources: container.Resources{
			Memory:     memory,
			MemorySwap: memory,
			// Socket buffers are limited from the host once the container
			// runs (sockmem.go): runc 1.1 ignores KernelMemoryTCP, which
			// Docker deprecates.
			PidsLimit: new(r.pidsLimit(lim)),
			NanoCPUs:  cpus * 1e9,
			Ulimits: []*units.Ulimit{
				// CPU time per process, in whole seconds: SIGXCPU, then
				// SIGKILL a second later.
				{Name: "cpu", Soft: cpuSeconds, Hard: cpuSeconds + 1},
				{Name: "fsize", Soft: lim.FileSizeBytes, Hard: lim.FileSizeBytes},
				{Name: "nofile", Soft: lim.OpenFiles, Hard: lim.OpenFiles},
				// The uid is the container's own (uids.go), so this counts
				// its processes only.
				{Name: "nproc", Soft: r.nproc(lim), Hard: r.nproc(lim)},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
		// /tmp: a tmpfs of the disk size, holding no device files or
		// setuid binaries (programs may run what they write there and in
		// /work, as in the native sandbox).
		Tmpfs: map[string]string{
			"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", lim.DiskBytes),
		},
		// The native sandbox's TCP buffer maxima in the container's own
		// network namespace (sandboxinit/netlimits.go): a second wall
		// behind the memory cgroup's charge of socket buffers.
		Sysctls: r.socketSysctls(),
		// What /proc tells of the host: masked (an empty file, an empty
		// read-only directory), as the native sandbox hides it. Docker's
		// own defaults are kept in the list, which replaces them.
		MaskedPaths: maskedPaths,
		// /work and /code: tmpfs volumes the daemon creates with the
		// container and removes with it (a tmpfs given in Tmpfs cannot be
		// written through the API's archive upload; a volume can). No host
		// directory is mounted. /work is root's, sticky and writable by
		// all: the program creates files there, and cannot rename or
		// remove the read-only input files and directories, which are
		// root's (files.go). /code is root's and noexec: the program
		// cannot change its own file.
		Mounts: []mount.Mount{
			tmpfsVolume(lang.WorkDir, fmt.Sprintf("size=%d,uid=0,gid=0,mode=1777,nosuid,nodev", lim.DiskBytes)),
			tmpfsVolume(lang.CodeDir, fmt.Sprintf("size=%d,uid=0,gid=0,mode=0755,noexec,nosuid,nodev", codeBytes)),
		},
		// Nothing of the host's: no IPC namespace shared, no devices added,
		// logs not kept (the output is read from the exec, not the logs).
		IpcMode:    "private",
		LogConfig:  container.LogConfig{Type: "none"},
		AutoRemove: false,
	}
}

// tmpfsVolume is an anonymous volume at target, made by the local driver
// as a tmpfs mounted with opts.
func tmpfsVolume(target, opts string) mount.Mount {
	return mount.Mount{
		Type:   mount.TypeVolume,
		Target: target,
		VolumeOptions: &mount.VolumeOptions{
			Labels: runLabels(),
			DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
				"type": "tmpfs", "device": "tmpfs", "o": opts,
			}},
		},
	}
}

// maskedPaths are the paths of /proc and /sys the program sees empty:
// Docker's defaults, and what of the host the native sandbox hides (the
// conformance suite's KernelView lists them): the host's command line,
// boot id, memory and CPU counters, interrupts, devices and filesystems.
var maskedPaths = []string{
	// Docker's defaults.
	"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/sys/firmware", "/sys/devices/virtual/powercap",
	// The host's.
	// Not /proc/meminfo and /proc/stat, which programs read (free, nproc,
	// Node's os.cpus()): made-up versions are bound over them, as the
	// native sandbox does (kernelview.go).
	"/proc/cmdline", "/proc/sys/kernel/random/boot_id", "/proc/cgroups",
	"/proc/key-users", "/proc/interrupts", "/proc/softirqs", "/proc/vmstat", "/proc/zoneinfo",
	"/proc/buddyinfo", "/proc/pagetypeinfo", "/proc/diskstats", "/proc/partitions",
	"/proc/pressure", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/slabinfo", "/proc/swaps",
	"/proc/modules", "/proc/kallsyms", "/proc/sysvipc", "/proc/locks", "/proc/vmallocinfo",
	"/proc/mtrr", "/proc/iomem", "/proc/ioports", "/proc/dma", "/proc/devices", "/proc/misc",
}

// cpuSeconds is lim's CPU time in whole seconds, rounded up: the
// RLIMIT_CPU of each process.
func cpuSeconds(lim sandbox.Limits) int64 { return (lim.CPUTimeMS + 999) / 1000 }

// runLabels are the labels of a run's container and volumes: the mark of
// this package, and the process that made them (sweep.go), so that what a
// crashed process left can be removed by the next.
func runLabels() map[string]string {
	return map[string]string{labelKey: "1", ownerKey: selfOwner()}
}

// socketSysctls are the sysctls of a run's network namespace: the native
// sandbox's TCP buffer maxima, under runc. gVisor's network stack is its
// own, not the host kernel's, and takes no host sysctl.
func (r *Runtime) socketSysctls() map[string]string {
	if r.ociRuntime != RuncRuntime {
		return nil
	}
	return map[string]string{
		"net.ipv4.tcp_rmem": "4096 131072 2097152",
		"net.ipv4.tcp_wmem": "4096 16384 2097152",
	}
}

// nproc is the nproc rlimit of a run's processes: the program's, with
// room for docker-init and the waiting process, and under gVisor for the
// output relay (gvisor_relay.go).
func (r *Runtime) nproc(lim sandbox.Limits) int64 {
	if r.ociRuntime == GVisorRuntime {
		return lim.Processes + pidsReserve + relayProcesses
	}
	return lim.Processes + pidsReserve
}

// pidsLimit is the container's pids limit for lim.
func (r *Runtime) pidsLimit(lim sandbox.Limits) int64 {
	if r.ociRuntime == GVisorRuntime {
		return lim.Processes + pidsReserve + gvisorThreads
	}
	return lim.Processes + pidsReserve
}
