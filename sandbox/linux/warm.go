package linux

import (
	"context"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Why one interpreter per warm sandbox, not a zygote that forks each run:
//
// A zygote (one pre-initialised interpreter forking every run into a new
// sandbox) makes a run cost a fork, and would give the best throughput.
// But the zygote must hold the privileges to build each child's sandbox
// (namespaces, mounts, cgroup), so a long-lived root process with pandas
// and matplotlib loaded would sit outside every sandbox; each child would
// inherit its memory image, so runs would share address-space layout
// (ASLR) and whatever the zygote ever held; and the sandbox set-up would
// run inside an interpreter instead of the small init program. Here every
// interpreter starts inside its own sandbox after the sandbox is complete,
// as the unprivileged user, under seccomp and the cgroup: starting it
// early changes when the work is done, never what a program can reach.
// The cost is throughput (each run still pays an interpreter start, in
// the background); the measured figures are in the README.

// DefaultPreload is what a warm Python interpreter imports in advance: the
// libraries whose import costs far more than most programs sent to it.
var DefaultPreload = []string{"numpy", "pandas", "matplotlib.pyplot"}

// launchWarm builds a sandbox and starts a kernel in it that imports
// preload and waits for one stateless program. The sandbox is complete,
// limits and filters applied, before the interpreter starts: starting it
// early changes when the work is done, not what the program can reach.
func (r *Runtime) launchWarm(preload []string) (*sandboxProc, error) {
	p, err := r.launch(r.defaultCgroupLimits)
	if err != nil {
		return nil, err
	}
	k, err := r.bootKernel(context.Background(), p, sandbox.DefaultLimits.WithDefaults(), nil, nil, statelessKernel, preload)
	if err != nil {
		_ = p.release()
		return nil, err
	}
	p.kernel = k
	if n, err := p.cg.pidsCurrent(); err == nil {
		r.warmTasks.Store(n)
	}
	return p, nil
}

// takeWarm returns a warm sandbox for req if one is ready and req fits it:
// Python, the disk size the sandbox was built with, rlimits no higher
// than those the interpreter started with (it can only lower its own),
// a process limit no lower than the tasks the interpreter already has,
// and no environment variable the interpreter has read already
// (startupEnv). Read-only input files are sealed by the host as the
// sandbox's init seals them (see placeFiles).
func (r *Runtime) takeWarm(req *sandbox.Request, lim sandbox.Limits) *sandboxProc {
	def := sandbox.DefaultLimits.WithDefaults()
	if r.warm == nil || r.zygote || req.Language != sandbox.Python || lim.DiskBytes != def.DiskBytes || startupEnv(req.Env) ||
		lim.FileSizeBytes > def.FileSizeBytes || lim.OpenFiles > def.OpenFiles ||
		lim.Processes < r.warmTasks.Load() {
		return nil
	}
	p := r.warm.take()
	if p == nil {
		return nil
	}
	if err := p.cg.setLimits(cgroupLimits{MemoryBytes: lim.MemoryBytes, Pids: lim.Processes}); err != nil {
		_ = r.retire(p)
		return nil
	}
	// Security: the interpreter's threads are the program's, and lowering
	// pids.max below the cgroup's count kills nothing. Counted after the
	// limit is set, the count can no longer grow past it: a sandbox whose
	// interpreter already has more tasks than the run may is not used, so
	// that limits.processes holds for a warm run as for a cold one.
	if n, err := p.cg.pidsCurrent(); err != nil || n > lim.Processes {
		_ = r.retire(p)
		return nil
	}
	return p
}
