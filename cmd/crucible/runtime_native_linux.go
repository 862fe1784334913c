package main

import (
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
)

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
