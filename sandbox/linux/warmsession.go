package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Warm sessions (Options.WarmSessions). A session's start costs a sandbox,
// an interpreter and, for data work, the import of pandas: far more than
// the cell that follows. The warm pool keeps sessions started ahead of
// time: each a sandbox built, locked down and under seccomp, with the
// session kernel running as the unprivileged user and Preload imported,
// waiting on its private channel. Starting it early changes when the work
// is done, not what a cell can reach (see warm.go); no code of anyone's
// has run in it, and a taken one is the session's alone, then destroyed.
//
// A warm session is built with the default limits, and the request's are
// made exact when one is taken, so that a session is served warm whatever
// limits it asks for:
//
//   - memory and processes: the cgroup's limits, set from the host; a
//     kernel that already holds more tasks (numpy's threads) than the
//     session may have is not used, nor one that used as much memory as
//     the session may (pandas alone takes some 85 MiB): such a session
//     starts cold, without the preload;
//   - disk: the size of the working tmpfs, reconfigured from the host
//     (resizeDisk), and /proc/meminfo rewritten (writeMeminfo);
//   - rlimits (file size, open files, processes): the kernel starts with
//     the largest a session may have (warmSessionRlimits) and lowers them
//     to the session's (kernel.Setup) before the first cell; it cannot
//     raise them again;
//   - wall time, CPU time and output are per cell, the host's.
//
// The request's files are placed by the host beneath the working
// directory, read-only ones sealed as init seals them (placeFiles); its
// environment is added by the kernel, unless it sets a variable the
// interpreter has read already (startupEnv): such a session starts cold.
//
// A replacement is asked for as soon as one is taken, and built once no
// cell runs in any session of the runtime (cellGate), so that building it
// never competes with a running cell for the CPU.

// setupWait bounds how long a warm kernel may take to answer its setup.
const setupWait = 5 * time.Second

// launchWarmSession builds a sandbox with the default limits and starts a
// session kernel in it that imports preload and waits for its setup.
func (r *Runtime) launchWarmSession(preload []string) (*sandboxProc, error) {
	p, err := r.launch(r.defaultCgroupLimits)
	if err != nil {
		return nil, err
	}
	k, err := r.bootKernel(context.Background(), p, sandbox.DefaultLimits().WithDefaults(), nil, nil, warmSessionKernel, preload)
	if err != nil {
		_ = p.release()
		return nil, err
	}
	p.kernel = k
	if n, err := p.cg.pidsCurrent(); err == nil {
		r.warmSessionTasks.Store(n)
	}
	if u, err := p.cg.usage(); err == nil {
		r.warmSessionMemory.Store(u.PeakBytes)
	}
	return p, nil
}

// takeWarmSession returns a warm session's sandbox made req's (limits,
// files and environment), or nil when there is no pool, none is ready,
// or req cannot be served warm. A warm session that fails to become req's
// is destroyed, and req starts cold.
func (r *Runtime) takeWarmSession(ctx context.Context, req *sandbox.SessionRequest, lim sandbox.Limits) *sandboxProc {
	top := warmSessionRlimits()
	if r.warmSessions == nil || startupEnv(req.Env) || lim.Processes < r.warmSessionTasks.Load() ||
		lim.MemoryBytes <= r.warmSessionMemory.Load() ||
		lim.Processes > top.Processes || lim.FileSizeBytes > top.FileSizeBytes || lim.OpenFiles > top.OpenFiles {
		return nil
	}
	p := takeFrom(ctx, r.warmSessions)
	if p == nil {
		return nil
	}
	if err := r.fitWarmSession(p, req, lim); err != nil {
		_ = p.release()
		return nil
	}
	return p
}

// fitWarmSession applies req's limits, files and environment to the warm
// session in p.
func (r *Runtime) fitWarmSession(p *sandboxProc, req *sandbox.SessionRequest, lim sandbox.Limits) error {
	if err := p.cg.setLimits(cgroupLimits{MemoryBytes: lim.MemoryBytes, Pids: lim.Processes}); err != nil {
		return err
	}
	// As in takeWarm: lowering pids.max kills nothing, so a kernel with
	// more tasks than the session may have is not used.
	if n, err := p.cg.pidsCurrent(); err != nil || n > lim.Processes {
		return fmt.Errorf("the warm kernel has %d tasks, the session may have %d (%v)", n, lim.Processes, err)
	}
	initPid := p.cmd.Process.Pid
	if err := resizeDisk(initPid, lim.DiskBytes); err != nil {
		return err
	}
	if err := writeMeminfo(initPid, lim.MemoryBytes); err != nil {
		return err
	}
	work, err := openWorkDir(initPid)
	if err != nil {
		return err
	}
	err = work.placeFiles(req.Files, p.uid)
	work.close()
	if err != nil {
		return err
	}
	if err := setupKernel(p, req.Env, lim); err != nil {
		return err
	}
	// Peak memory is the session's from here, as in a cold one.
	p.cg.resetPeak()
	return nil
}

// warmSessionRlimits are the rlimits a warm session's kernel starts with:
// the largest a session may ask, or the host's own hard limit where that
// is lower (raising a hard limit takes CAP_SYS_RESOURCE, which a host,
// such as a container, may lack; a cold session asking more fails there).
func warmSessionRlimits() kernel.SetupLimits {
	capped := func(resource int, want int64) int64 {
		var rl unix.Rlimit
		if err := unix.Getrlimit(resource, &rl); err == nil && rl.Max < uint64(want) {
			return int64(rl.Max)
		}
		return want
	}
	return kernel.SetupLimits{
		FileSizeBytes: capped(unix.RLIMIT_FSIZE, sandbox.MaxLimits().FileSizeBytes),
		OpenFiles:     capped(unix.RLIMIT_NOFILE, sandbox.MaxLimits().OpenFiles),
		Processes:     capped(unix.RLIMIT_NPROC, sandbox.MaxLimits().Processes),
	}
}

// setupKernel sends a warm session kernel its session's environment and
// rlimits, and waits for its answer.
func setupKernel(p *sandboxProc, env map[string]string, lim sandbox.Limits) error {
	token := ids.New(ids.Session)
	msg, err := json.Marshal(kernel.Setup{Op: "setup", ID: 0, Token: token, Env: env, Limits: kernel.SetupLimits{
		FileSizeBytes: lim.FileSizeBytes, OpenFiles: lim.OpenFiles, Processes: lim.Processes,
	}})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(setupWait)
	_ = p.toKernel.SetWriteDeadline(deadline)
	if _, err := p.toKernel.Write(append(msg, '\n')); err != nil {
		return fmt.Errorf("send the kernel its setup: %w", err)
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case reply, ok := <-p.kernel.replies.replies:
		switch {
		case !ok:
			return errors.New("the warm kernel's reply channel broke")
		case reply.ID != 0 || reply.Token != token:
			return errors.New("the warm kernel answered its setup with another reply")
		case reply.Status != "ok":
			if reply.Error != nil {
				return fmt.Errorf("the warm kernel's setup failed: %s: %s", reply.Error.Type, reply.Error.Message)
			}
			return errors.New("the warm kernel's setup failed")
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("the warm kernel did not answer its setup within %s", setupWait)
	}
}
