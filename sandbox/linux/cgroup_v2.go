package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
)

type cgroupV2 struct {
	m    *cgroup2.Manager
	path string
}

func newCgroupV2(path string, lim cgroupLimits) (*cgroupV2, error) {
	noSwap := int64(0)
	res := &cgroup2.Resources{
		// memory.swap.max = 0: a run may not push its pages to swap and so
		// use more than its memory limit. Socket buffers need no limit of
		// their own, unlike on v1: cgroup v2 charges them to memory.current
		// (memory.stat's "sock") unless the host booted with
		// cgroup.memory=nosocket, so memory.max bounds them with the rest.
		Memory: &cgroup2.Memory{Max: &lim.MemoryBytes, Swap: &noSwap},
		Pids:   &cgroup2.Pids{Max: lim.Pids},
		// Enabling the cpu controller makes cpu.stat report usage.
		CPU: &cgroup2.CPU{},
	}
	m, err := cgroup2.NewManager(cgroupRoot, path, res)
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 %s: %w", path, err)
	}
	return &cgroupV2{m: m, path: filepath.Join(cgroupRoot, path)}, nil
}

func (c *cgroupV2) add(pid int) error { return c.m.AddProc(uint64(pid)) }

func (c *cgroupV2) setLimits(lim cgroupLimits) error {
	if err := writeInt(filepath.Join(c.path, "memory.max"), lim.MemoryBytes); err != nil {
		return err
	}
	return c.setPidsMax(lim.Pids)
}

func (c *cgroupV2) setPidsMax(n int64) error {
	return writeInt(filepath.Join(c.path, "pids.max"), n)
}

func (c *cgroupV2) pidsCurrent() (int64, error) {
	return readInt(filepath.Join(c.path, "pids.current"))
}

// evict moves pid to the supervisor leaf: in cgroup v2 only leaves hold
// processes once their parent distributes controllers.
func (c *cgroupV2) evict(pid int) error {
	dir := filepath.Join(cgroupRoot, cgroupParent, supervisorGroup)
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	// ESRCH: init has already exited, so there is nothing to move.
	if err := writeInt(filepath.Join(dir, "cgroup.procs"), int64(pid)); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

func (c *cgroupV2) resetPeak() {}

func (c *cgroupV2) cpuTime() (time.Duration, error) {
	us, err := readKeyed(filepath.Join(c.path, "cpu.stat"), "usage_usec")
	return time.Duration(us) * time.Microsecond, err
}

func (c *cgroupV2) usage() (cgroupUsage, error) {
	var u cgroupUsage
	var err error
	if u.CPU, err = c.cpuTime(); err != nil {
		return u, err
	}
	// memory.peak exists since Linux 5.19; before it the peak is unknown.
	u.PeakBytes, _ = readInt(filepath.Join(c.path, "memory.peak"))
	u.OOMKills, err = readKeyed(filepath.Join(c.path, "memory.events"), "oom_kill")
	return u, err
}

func (c *cgroupV2) freeze() error { return c.setFreezer(1, "frozen") }

func (c *cgroupV2) thaw() error { return c.setFreezer(0, "thawed") }

// setFreezer writes cgroup.freeze until cgroup.events says "frozen" is the
// same (the kernel updates it once every task has stopped, or at once on
// a thaw).
func (c *cgroupV2) setFreezer(frozen int64, state string) error {
	return setFreezer(state, freezeTimeout, func() error { return writeInt(filepath.Join(c.path, "cgroup.freeze"), frozen) },
		func() (bool, error) {
			v, err := readKeyed(filepath.Join(c.path, "cgroup.events"), "frozen")
			return v == frozen, err
		})
}

// kill uses cgroup.kill (Linux 5.14+), which the kernel applies atomically
// to every process, or the library's freeze-signal-thaw fallback.
func (c *cgroupV2) kill() error { return c.m.Kill() }

func (c *cgroupV2) remove() error { return c.m.Delete() }
