package main

import (
	"github.com/spf13/cobra"

	// The native runtime's init takes over the process before main runs
	// when this binary is started as a sandbox's init (package linux's
	// init function).
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/sandbox/linux/cloexec"
	"github.com/crucible-sandbox/crucible/service"
)

// nativeDefaultUIDCount is the native runtime's default uid range size.
const nativeDefaultUIDCount = linux.DefaultUIDCount

// checkNativeUIDRange checks --config's uid_base and uid_count (zero:
// the defaults) as the native runtime's uid range.
func checkNativeUIDRange(base, count int) error {
	if base == 0 {
		base = linux.DefaultUIDBase
	}
	if count == 0 {
		count = linux.DefaultUIDCount
	}
	return linux.CheckUIDRange(base, count)
}

// closeInherited marks every descriptor crucible inherited
// close-on-exec. Security: a descriptor crucible inherited without
// close-on-exec (a directory or file its shell opened) would be open in
// everything it starts, sandboxes' init among them; from here on only the
// descriptors crucible hands a child on purpose reach it. (Sandbox init
// closes whatever it inherits too: see package sandboxinit.)
func closeInherited() error { return cloexec.From(3) }

// nativeCommands are the commands of the native runtime alone: bench.
func nativeCommands() []*cobra.Command { return []*cobra.Command{newBenchCommand()} }

// nativeRuntimeAvailable says that this build has the native runtime
// (Linux's namespaces, cgroups and seccomp); whether this host can run it
// is crucible doctor's to say.
const nativeRuntimeAvailable = true

// startRuntime builds the native runtime from --rootfs, --image and
// --store; adjust, if set, completes its options. The error is the
// command's exit: a usage error for bad flags, a platform error when the
// host cannot run sandboxes.
func startRuntime(rootfs, imageName, store string, adjust func(*linux.Options)) (*linux.Runtime, error) {
	root, err := resolveRoot(rootfs, imageName, store)
	if err != nil {
		return nil, usageError(err)
	}
	opts := linux.Options{RootFS: root.RootFS, ImageDigest: root.Digest, Env: root.Env, TmpSeed: root.TmpSeed}
	if adjust != nil {
		adjust(&opts)
	}
	rt, err := linux.New(opts)
	if err != nil {
		return nil, platformError(err)
	}
	return rt, nil
}

// startNativeImage starts the native runtime on the root filesystem of
// rootfs, built and store (startRuntime) with s's pools and uids.
func startNativeImage(rootfs, built, store string, s runtimeSettings) (*imageRuntime, error) {
	var digest string
	rt, err := startRuntime(rootfs, built, store, func(o *linux.Options) {
		if s.warm != nil {
			o.Warm = s.warm(o.RootFS)
		}
		o.WarmSessions, o.Prestart = s.warmSessions, s.prestart
		o.UIDBase, o.UIDCount, o.Logger = s.uidBase, s.uidCount, s.logger
		digest = o.ImageDigest
	})
	if err != nil {
		return nil, err
	}
	conv := func(p linux.PoolStats) service.PoolStats {
		return service.PoolStats{Size: p.Size, Ready: p.Ready, Hits: p.Hits, Misses: p.Misses,
			BuildFailures: p.BuildFailures, RecycleErrors: p.RecycleErrors, Retired: p.RetiredBy}
	}
	pools := func() map[string]service.PoolStats {
		return map[string]service.PoolStats{"prestart": conv(rt.PoolStats()), "warm": conv(rt.WarmStats()),
			"warm-sessions": conv(rt.WarmSessionStats())}
	}
	return &imageRuntime{Runtime: rt, digest: digest, hints: errorHints(rootfs, built, store), pools: pools, close: rt.Close}, nil
}
