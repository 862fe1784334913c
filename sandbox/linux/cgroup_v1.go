package linux

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// v1Controllers are the cgroup v1 hierarchies a run joins: memory and pids
// enforce limits, cpuacct measures CPU time, and freezer stops every process
// at once so that a kill cannot race with fork.
var v1Controllers = []string{"memory", "pids", "cpuacct", "freezer"}

type cgroupV1 struct {
	cg     cgroup1.Cgroup
	path   string
	memsw  bool
	tcpmem bool
	lim    cgroupLimits
}

// socketMemoryFor returns the cgroup v1 limit on a run's socket buffers
// for a memory limit: a quarter of it. Cgroup v1 charges socket buffers
// (TCP's and, through the same counter, UDP's) to
// memory.kmem.tcp.usage_in_bytes, apart from memory.usage_in_bytes, and
// only in a cgroup whose memory.kmem.tcp.limit_in_bytes was written:
// without this limit loopback connections whose receiver never reads hold
// any amount of host memory (hundreds of MiB under a 128 MiB limit). The
// two counters are separate, so a run may hold its memory limit plus this
// much; a quarter leaves loopback servers and clients ample room.
func socketMemoryFor(memoryBytes int64) int64 { return memoryBytes / 4 }

func newCgroupV1(path string, lim cgroupLimits) (*cgroupV1, error) {
	hierarchy := func() ([]cgroup1.Subsystem, error) {
		return []cgroup1.Subsystem{
			cgroup1.NewMemory(cgroupRoot),
			cgroup1.NewPids(cgroupRoot),
			cgroup1.NewCpuacct(cgroupRoot),
			cgroup1.NewFreezer(cgroupRoot),
		}, nil
	}
	mem := &specs.LinuxMemory{Limit: &lim.MemoryBytes}
	// Without a memory+swap limit a run could push its pages to swap and use
	// far more than its memory limit. Kernels without swap accounting lack
	// the file; they have no way to exceed the limit through swap anyway.
	if _, err := os.Stat(filepath.Join(cgroupRoot, "memory", "memory.memsw.limit_in_bytes")); err == nil {
		mem.Swap = &lim.MemoryBytes
	}
	// Written before any process joins, so every socket of the run is
	// charged: the kernel charges only sockets created while the limit is
	// set. Kernels built without kernel-memory accounting lack the file.
	tcp := socketMemoryFor(lim.MemoryBytes)
	if _, err := os.Stat(filepath.Join(cgroupRoot, "memory", "memory.kmem.tcp.limit_in_bytes")); err == nil {
		mem.KernelTCP = &tcp
	}
	res := &specs.LinuxResources{Memory: mem, Pids: &specs.LinuxPids{Limit: &lim.Pids}}
	cg, err := cgroup1.New(cgroup1.StaticPath(path), res, cgroup1.WithHierarchy(hierarchy))
	if err != nil {
		return nil, fmt.Errorf("cgroup v1 %s: %w", path, err)
	}
	return &cgroupV1{cg: cg, path: path, memsw: mem.Swap != nil, tcpmem: mem.KernelTCP != nil, lim: lim}, nil
}

func (c *cgroupV1) file(controller, name string) string {
	return filepath.Join(cgroupRoot, controller, c.path, name)
}

func (c *cgroupV1) add(pid int) error { return c.cg.Add(cgroup1.Process{Pid: pid}) }

// setLimits writes the new limits. The kernel insists that the memory limit
// never exceed the memory+swap limit, so the order of the two writes
// depends on whether the limit grows or shrinks.
func (c *cgroupV1) setLimits(lim cgroupLimits) error {
	mem := c.file("memory", "memory.limit_in_bytes")
	memsw := c.file("memory", "memory.memsw.limit_in_bytes")
	files := []string{mem}
	if c.memsw {
		files = []string{mem, memsw}
		if lim.MemoryBytes > c.lim.MemoryBytes {
			files = []string{memsw, mem}
		}
	}
	if lim.MemoryBytes != c.lim.MemoryBytes {
		for _, f := range files {
			if err := writeInt(f, lim.MemoryBytes); err != nil {
				return err
			}
		}
		// The kernel takes a new socket limit at any time, tasks or not.
		if c.tcpmem {
			if err := writeInt(c.file("memory", "memory.kmem.tcp.limit_in_bytes"), socketMemoryFor(lim.MemoryBytes)); err != nil {
				return err
			}
		}
	}
	c.lim.MemoryBytes = lim.MemoryBytes
	if lim.Pids != c.lim.Pids {
		return c.setPidsMax(lim.Pids)
	}
	return nil
}

func (c *cgroupV1) setPidsMax(n int64) error {
	if err := writeInt(c.file("pids", "pids.max"), n); err != nil {
		return err
	}
	c.lim.Pids = n
	return nil
}

func (c *cgroupV1) pidsCurrent() (int64, error) { return readInt(c.file("pids", "pids.current")) }

// evict moves pid to the parent group in every hierarchy; in cgroup v1 a
// group may hold processes beside its children.
func (c *cgroupV1) evict(pid int) error {
	for _, ctrl := range v1Controllers {
		procs := filepath.Join(cgroupRoot, ctrl, cgroupParent, "cgroup.procs")
		// ESRCH: init has already exited, so there is nothing to move.
		if err := writeInt(procs, int64(pid)); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
	}
	return nil
}

func (c *cgroupV1) resetPeak() { _ = writeInt(c.file("memory", "memory.max_usage_in_bytes"), 0) }

func (c *cgroupV1) cpuTime() (time.Duration, error) {
	ns, err := readInt(c.file("cpuacct", "cpuacct.usage"))
	return time.Duration(ns), err
}

func (c *cgroupV1) usage() (cgroupUsage, error) {
	var u cgroupUsage
	var err error
	if u.CPU, err = c.cpuTime(); err != nil {
		return u, err
	}
	if u.PeakBytes, err = readInt(c.file("memory", "memory.max_usage_in_bytes")); err != nil {
		return u, err
	}
	// memory.oom_control gained its oom_kill counter in Linux 4.13; older
	// kernels only say whether the limit was hit, which is weaker evidence.
	if u.OOMKills, err = readKeyed(c.file("memory", "memory.oom_control"), "oom_kill"); err != nil {
		failcnt, ferr := readInt(c.file("memory", "memory.failcnt"))
		if ferr != nil {
			return u, err
		}
		u.OOMKills = failcnt
	}
	return u, nil
}

// freeze holds every process of the cgroup still. A process frozen by the
// v1 freezer ignores SIGKILL until it is thawed, so a session left frozen
// would outlive a crucible killed with -9: the SIGKILL its PID namespace
// gets when init dies would wait for a thaw nobody sends. So on v1 the
// freezer only holds the processes while each is sent SIGSTOP (none can
// fork meanwhile, so none is missed); thawed, each stops before it runs
// another instruction of its own, and a stopped process dies of SIGKILL.
// freeze returns once every one has stopped.
func (c *cgroupV1) freeze() error {
	if err := c.setFreezer("FROZEN"); err != nil {
		// Never leave the cgroup frozen: its processes could not be
		// killed.
		_ = c.setFreezer("THAWED")
		return err
	}
	procs, err := c.cg.Processes(cgroup1.Freezer, true)
	for _, p := range procs {
		_ = syscall.Kill(p.Pid, syscall.SIGSTOP)
	}
	if terr := c.setFreezer("THAWED"); err == nil {
		err = terr
	}
	if err != nil {
		return err
	}
	return waitStopped(procs)
}

// thaw lets the processes freeze stopped run again. Stopped processes
// cannot fork, so the list read is complete.
func (c *cgroupV1) thaw() error {
	procs, err := c.cg.Processes(cgroup1.Freezer, true)
	for _, p := range procs {
		_ = syscall.Kill(p.Pid, syscall.SIGCONT)
	}
	return err
}

// waitStopped waits until every process of procs is stopped (or gone),
// polling /proc as setFreezer polls, for at most freezeTimeout.
func waitStopped(procs []cgroup1.Process) error {
	return setFreezer("stopped", freezeTimeout, func() error { return nil }, func() (bool, error) {
		for _, p := range procs {
			if !stoppedOrGone(p.Pid) {
				return false, nil
			}
		}
		return true, nil
	})
}

// stoppedOrGone reports whether process pid is stopped, a zombie, or gone.
func stoppedOrGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	switch b[i+2] {
	case 'T', 't', 'Z', 'X':
		return true
	}
	return false
}

// setFreezer writes state to freezer.state until the file reads it back
// (FREEZING means some task has yet to stop).
func (c *cgroupV1) setFreezer(state string) error {
	file := c.file("freezer", "freezer.state")
	return setFreezer(strings.ToLower(state), freezeTimeout, func() error { return os.WriteFile(file, []byte(state), 0) },
		func() (bool, error) {
			b, err := os.ReadFile(file)
			return strings.TrimSpace(string(b)) == state, err
		})
}

// kill freezes the cgroup so that no process can fork while the list is
// read, signals every process, and thaws it so the signals are delivered.
func (c *cgroupV1) kill() error {
	if err := c.cg.Freeze(); err != nil {
		return err
	}
	procs, err := c.cg.Processes(cgroup1.Freezer, true)
	for _, p := range procs {
		_ = syscall.Kill(p.Pid, syscall.SIGKILL)
	}
	if terr := c.cg.Thaw(); err == nil {
		err = terr
	}
	return err
}

func (c *cgroupV1) remove() error { return c.cg.Delete() }
