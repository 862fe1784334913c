package linux

import (
	"context"
	"fmt"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// A warm sandbox of Options.SingleRunWarm serves one run: one interpreter
// per sandbox and per run.
//
// A zygote outside the sandboxes (one pre-initialised interpreter forking
// every run into a new sandbox) would have to hold the privileges to
// build each child's sandbox (namespaces, mounts, cgroup): a long-lived
// root process with pandas and matplotlib loaded would sit outside every
// sandbox, and the sandbox set-up would run inside an interpreter instead
// of the small init program. So the default, zygote slots (zygote.go),
// puts the zygote inside a sandbox instead, one per slot, started like
// the interpreter here: after the sandbox is complete, unprivileged,
// under seccomp and the cgroup. What the runs of a slot then share (the
// zygote's memory image, so its address-space layout and str hash seed)
// is said there; here every run has an interpreter of its own, at the
// cost of an interpreter start per run, in the background.

// DefaultPreload returns what a warm Python interpreter imports in
// advance: the libraries whose import costs far more than most programs
// sent to it. Each call returns a slice of its own.
func DefaultPreload() []string { return []string{"numpy", "pandas", "matplotlib.pyplot"} }

// launchWarm builds a sandbox and starts a kernel in it that imports
// preload and waits for one stateless program. The sandbox is complete,
// limits and filters applied, before the interpreter starts: starting it
// early changes when the work is done, not what the program can reach.
func (r *Runtime) launchWarm(preload []string) (*sandboxProc, error) {
	p, err := r.launch(r.defaultCgroupLimits)
	if err != nil {
		return nil, err
	}
	k, err := r.bootKernel(context.Background(), p, sandbox.DefaultLimits().WithDefaults(), nil, nil, statelessKernel, preload)
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
func (r *Runtime) takeWarm(ctx context.Context, req *sandbox.Request, lim sandbox.Limits) *sandboxProc {
	def := sandbox.DefaultLimits().WithDefaults()
	if r.warm == nil || req.Language != sandbox.Python || lim.DiskBytes != def.DiskBytes || startupEnv(req.Env) ||
		lim.FileSizeBytes > def.FileSizeBytes || lim.OpenFiles > def.OpenFiles ||
		lim.Processes < r.warmTasks.Load() {
		return nil
	}
	p := takeFrom(ctx, r.warm)
	if p == nil {
		return nil
	}
	if err := p.cg.setLimits(cgroupLimits{MemoryBytes: lim.MemoryBytes, Pids: lim.Processes}); err != nil {
		_ = r.warm.put(p, retireFor(retiredLimits, err))
		return nil
	}
	// Security: the interpreter's threads are the program's, and lowering
	// pids.max below the cgroup's count kills nothing. Counted after the
	// limit is set, the count can no longer grow past it: a sandbox whose
	// interpreter already has more tasks than the run may is not used, so
	// that limits.processes holds for a warm run as for a cold one.
	if n, err := p.cg.pidsCurrent(); err != nil || n > lim.Processes {
		_ = r.warm.put(p, retireFor(retiredLimits, fmt.Errorf("the interpreter has %d tasks, the run may have %d (%v)", n, lim.Processes, err)))
		return nil
	}
	return p
}
