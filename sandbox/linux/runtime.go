package linux

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/crucible-sandbox/crucible/internal/uidrange"
	"github.com/crucible-sandbox/crucible/policy/egress"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
	"github.com/crucible-sandbox/crucible/sandbox/linux/initexe"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// Options configure a Runtime.
type Options struct {
	// RootFS is a directory holding a complete root filesystem (for example
	// one built by `crucible image build`). Empty means the host's own
	// system directories (/usr, /bin, /lib, ...), bound read-only, with a
	// small allowlist of /etc.
	RootFS string
	// UIDBase and UIDCount reserve the host uids programs run as: each
	// live sandbox (prestarted, warm, in a session or a run) has a uid of
	// its own in [UIDBase, UIDBase+UIDCount), and the gid of the same
	// number, so that the kernel's per-user quotas are per sandbox (see
	// uids.go). Zero means DefaultUIDBase and DefaultUIDCount. The range
	// must not hold any other user's uid; UIDCount bounds the sandboxes
	// alive at once, so it must exceed Prestart+2×Warm+WarmSessions (a
	// zygote slot holds two; see Warm). Runtimes and processes may share
	// a range: a uid one of them uses, the others skip.
	UIDBase, UIDCount int
	// ImageDigest identifies RootFS's content; every Result carries it.
	ImageDigest string
	// TmpSeed is a directory of RootFS whose contents every sandbox gets in
	// its /tmp (see image.Manifest.TmpSeed).
	TmpSeed string
	// Env is added to every program's environment after the language's
	// own and before the request's, such as the location of a cache the
	// image prepared.
	Env []string
	// Warm is how many Python sandboxes to keep running with the
	// interpreter started and Preload imported, waiting for a stateless
	// Python run (one with the default disk size). Each is a zygote slot
	// (zygote.go), unless SingleRunWarm is set: its interpreter forks a
	// child per run, which runs as the slot's run user in a cgroup of its
	// own, and the slot is reset after each run and serves the next, up
	// to a bound. Runs of a slot share the interpreter's str hash seed
	// (PYTHONHASHSEED) and address-space layout; every other random
	// generator the preload made is reseeded. Each slot holds two uids.
	Warm int
	// SingleRunWarm makes each Warm sandbox serve one run and then be
	// destroyed, with an interpreter of its own, instead of a zygote
	// slot's many runs.
	SingleRunWarm bool
	// WarmSessions is how many sessions to keep started, with the session
	// kernel running and Preload imported, waiting for NewSession (see
	// warmsession.go for the requests one serves). Each holds its memory
	// while it waits: some 85 MiB charged to its cgroup (60 MiB of it the
	// interpreter's resident memory) with numpy, pandas and matplotlib in
	// the data-science image, and a uid. 0 keeps none.
	WarmSessions int
	// Preload lists the modules a warm interpreter (of Warm or
	// WarmSessions) imports in advance; nil means DefaultPreload(), and
	// modules the root filesystem lacks are skipped.
	Preload []string
	// MaxSessions caps the open sessions (default 16); SessionIdleTimeout
	// closes a session unused for that long (default 15 minutes).
	MaxSessions        int
	SessionIdleTimeout time.Duration
	// Egress configures the proxy through which a run with a network
	// allowlist reaches what it allows (see egress.go); the zero value
	// resolves names with the host's resolver.
	Egress egress.Config
	// Prestart is how many sandboxes to keep built ahead of time, waiting
	// for a request; 0 builds each sandbox when its run starts. A server
	// wants a few; a one-shot command wants none. Close releases them.
	Prestart int
	// Logger receives what fails in the background, where no caller sees
	// it: a pool's builds that fail, the sandboxes it retires and why,
	// errors destroying a sandbox after use (rate-limited; each pool's
	// lines carry its name, "prestart", "warm" or "warm-sessions"). Nil
	// means slog.Default().
	Logger *slog.Logger
}

// Runtime runs each request in a fresh native sandbox. It is safe for
// concurrent use.
type Runtime struct {
	// initPath is the executable every sandbox's init is started from.
	initPath string
	// base is what every sandbox shares; each gets a copy with its uid.
	base                sandboxinit.BaseConfig
	uids                *uidrange.Allocator
	imageDigest         string
	env                 []string
	egress              egress.Config
	defaultCgroupLimits cgroupLimits
	// pool keeps Options.Prestart's sandboxes; zygotes Options.Warm's
	// zygote slots, or warm those of Options.SingleRunWarm instead; and
	// warmSessions Options.WarmSessions'. Each is nil without any.
	pool         sandboxPool[*sandboxProc]
	zygotes      sandboxPool[*sandboxProc]
	warm         sandboxPool[*sandboxProc]
	warmSessions sandboxPool[*sandboxProc]
	// warmTasks is the number of processes and threads the last warm
	// interpreter built had once started (numpy's math library starts
	// threads as it is imported): a run allowed fewer is not served warm.
	// warmSessionTasks is the same for warm sessions, and
	// warmSessionMemory the memory the last one built had used: a
	// session allowed no more is not served warm.
	warmTasks         atomic.Int64
	warmSessionTasks  atomic.Int64
	warmSessionMemory atomic.Int64
	sessions          *sessionTable
	// cellsRunning counts the cells running in the sessions; warm
	// sessions are built while it is zero.
	cellsRunning cellGate
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New checks that this host can build sandboxes and prepares the root
// filesystem layout. It needs root: creating cgroups and mount namespaces,
// and switching to the sandbox user, are privileged.
func New(opts Options) (*Runtime, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the native sandbox needs root: it creates cgroups and mount " +
			"namespaces and switches programs to an unprivileged user; run crucible as root " +
			"(for example with sudo)")
	}
	if opts.Prestart < 0 || opts.Warm < 0 || opts.WarmSessions < 0 {
		return nil, fmt.Errorf("linux.Options: Prestart, Warm and WarmSessions must not be negative, got %d, %d and %d", opts.Prestart, opts.Warm, opts.WarmSessions)
	}
	uidBase, uidCount := cmp.Or(opts.UIDBase, DefaultUIDBase), cmp.Or(opts.UIDCount, DefaultUIDCount)
	if err := CheckUIDRange(uidBase, uidCount); err != nil {
		return nil, fmt.Errorf("linux.Options: UIDBase and UIDCount: %w", err)
	}
	kept := opts.Prestart + opts.Warm + opts.WarmSessions
	if !opts.SingleRunWarm {
		kept += opts.Warm // a zygote slot holds a second uid, its zygote's
	}
	if uidCount <= kept {
		return nil, fmt.Errorf("linux.Options: UIDCount (%d) must exceed Prestart+Warm+WarmSessions (%d, a zygote slot of Warm counting twice): every sandbox kept ready holds a uid", uidCount, kept)
	}
	uids, err := uidrange.New(uidBase, uidCount, uidrange.HostLockPath, "linux.Options.UIDCount, uid_count in crucible serve's --config")
	if err != nil {
		return nil, err
	}
	r := &Runtime{
		base:                sandboxinit.BaseConfig{Hostname: sandboxinit.Hostname, TmpSeed: opts.TmpSeed},
		uids:                uids,
		defaultCgroupLimits: cgroupLimitsFor(sandbox.DefaultLimits()),
		imageDigest:         opts.ImageDigest,
		env:                 opts.Env,
		egress:              opts.Egress,
		sessions:            newSessionTable(opts.MaxSessions, opts.SessionIdleTimeout),
	}
	if opts.RootFS == "" {
		r.base.Root, err = hostLayout()
	} else {
		r.base.Root, err = imageLayout(opts.RootFS)
		r.base.Image = filepath.Clean(opts.RootFS)
	}
	if err != nil {
		return nil, err
	}
	if r.base.StageDir, err = findStageDir(r.base.Root); err != nil {
		return nil, err
	}
	if r.base.Seccomp, err = assembleSeccomp(); err != nil {
		return nil, err
	}
	if r.initPath, err = initexe.Path(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(cgroupRoot); err != nil {
		return nil, fmt.Errorf("no cgroup filesystem at %s: the sandbox needs cgroups to limit memory and processes", cgroupRoot)
	}
	removeStaleCgroups()
	preload := opts.Preload
	if preload == nil {
		preload = DefaultPreload()
	}
	if opts.Prestart > 0 {
		r.pool = newOneShotPool("prestart", opts.Prestart, func() (*sandboxProc, error) { return r.launch(r.defaultCgroupLimits) }, opts.Logger)
	}
	switch {
	case opts.Warm > 0 && !opts.SingleRunWarm:
		r.zygotes = newRecyclePool("warm", opts.Warm, func() (*sandboxProc, error) { return r.launchZygote(preload) }, zygoteWait, opts.Logger)
	case opts.Warm > 0:
		r.warm = newOneShotPool("warm", opts.Warm, func() (*sandboxProc, error) { return r.launchWarm(preload) }, opts.Logger)
	}
	if opts.WarmSessions > 0 {
		r.warmSessions = newDetachPool("warm-sessions", opts.WarmSessions, func() (*sandboxProc, error) { return r.launchWarmSession(preload) }, r.cellsRunning.quiet, opts.Logger)
	}
	return r, nil
}

// findStageDir picks an existing host directory for init's private staging
// mount. The mount happens inside the sandbox's own mount namespace (the
// host's directory is never written to), but it hides what is below it
// there, so it must not hold anything the root binds (a root filesystem
// kept under /tmp, say).
func findStageDir(root []sandboxinit.RootEntry) (string, error) {
	candidates := []string{"/tmp", "/mnt", "/var/tmp", "/media", "/srv"}
next:
	for _, d := range candidates {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		for _, e := range root {
			if e.Source != "" && (e.Source == d || strings.HasPrefix(e.Source, d+"/")) {
				continue next
			}
		}
		return d, nil
	}
	return "", fmt.Errorf("no directory to stage the sandbox root on: need one of %s that does not hold the root filesystem", strings.Join(candidates, ", "))
}

// Run runs req in a fresh sandbox; see sandbox.Runtime.
func (r *Runtime) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	if err := req.Validate(); err != nil {
		return sandbox.Result{}, err
	}
	lim := req.Limits.WithDefaults()
	res := sandbox.Result{
		Language:    req.Language,
		CodeHash:    sandbox.CodeHash(req.Code),
		Limits:      lim,
		ExitCode:    -1,
		ImageDigest: r.imageDigest,
		Stdout:      sandbox.Data{},
		Stderr:      sandbox.Data{},
	}
	if ctx.Err() != nil {
		res.Status, res.Reason = sandbox.StatusKilled, "cancelled before the run started"
		return res, nil
	}
	x := &execution{rt: r, req: &req, lim: lim, spec: lang.For(req.Language), res: &res}
	if err := x.run(ctx); err != nil {
		// Cancelled while the sandbox or its kernel was being prepared:
		// the caller's doing, not the platform's; nothing of the program
		// ran (its processes, if any began, went with the sandbox).
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			res.Status, res.Reason = sandbox.StatusKilled, "run cancelled before the program started: "+cerr.Error()
			return res, nil
		}
		res.Status, res.Reason = sandbox.StatusInternal, err.Error()
		return res, err
	}
	return res, nil
}

// cgroupLimitsFor returns the cgroup limits of a sandbox being built for
// lim, with room for init's threads; armPids makes the process limit
// exact before the program is forked.
func cgroupLimitsFor(lim sandbox.Limits) cgroupLimits {
	return cgroupLimits{MemoryBytes: lim.MemoryBytes, Pids: lim.Processes + initThreadReserve}
}

// sandboxinit.RunConfig builds the message that turns a ready sandbox into req's run.
func runConfigFor(req *sandbox.Request, lim sandbox.Limits, spec lang.Spec, env []string) (*sandboxinit.RunConfig, [][]byte) {
	cfg := &sandboxinit.RunConfig{
		MainPath:      spec.MainPath(),
		Code:          req.Code,
		Argv:          spec.Argv(),
		Env:           lang.Environ(req.Language, env, req.Env),
		Dir:           lang.WorkDir,
		DiskBytes:     lim.DiskBytes,
		MemoryBytes:   lim.MemoryBytes,
		CPUSeconds:    uint64((lim.CPUTimeMS + 999) / 1000),
		FileSizeBytes: uint64(lim.FileSizeBytes),
		OpenFiles:     uint64(lim.OpenFiles),
		Processes:     uint64(lim.Processes),
	}
	var contents [][]byte
	cfg.Files, contents = inputFiles(req.Files)
	return cfg, contents
}

// inputFiles splits input files into the headers a run config carries and
// the contents that follow it on the config pipe.
func inputFiles(files []sandbox.File) ([]sandboxinit.FileHeader, [][]byte) {
	headers := make([]sandboxinit.FileHeader, len(files))
	contents := make([][]byte, len(files))
	for i, f := range files {
		headers[i] = sandboxinit.FileHeader{Name: f.Name, Size: int64(len(f.Content)), Executable: f.Executable, ReadOnly: f.ReadOnly}
		contents[i] = f.Content
	}
	return headers, contents
}
