package linux

import (
	"context"

	"github.com/crucible-sandbox/crucible/sandbox"
)

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
	k, err := r.bootKernel(context.Background(), p, sandbox.DefaultLimits.WithDefaults(), nil, nil, preload)
	if err != nil {
		_ = p.release()
		return nil, err
	}
	p.kernel = k
	return p, nil
}

// takeWarm returns a warm sandbox for req if one is ready and req fits it:
// Python, the disk size the sandbox was built with, and rlimits no higher
// than those the interpreter started with (it can only lower its own).
func (r *Runtime) takeWarm(req *sandbox.Request, lim sandbox.Limits) *sandboxProc {
	def := sandbox.DefaultLimits.WithDefaults()
	if r.warm == nil || req.Language != sandbox.Python || lim.DiskBytes != def.DiskBytes ||
		lim.FileSizeBytes > def.FileSizeBytes || lim.OpenFiles > def.OpenFiles {
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
	return p
}
