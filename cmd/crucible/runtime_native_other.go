//go:build !linux

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// nativeRuntimeAvailable says that this build has no native runtime: it
// is made of Linux's namespaces, cgroups and seccomp.
const nativeRuntimeAvailable = false

// errNativeNeedsLinux is what --runtime native says on this system.
var errNativeNeedsLinux = errors.New("the native runtime needs Linux; use --runtime docker (or gvisor)")

// nativeDefaultUIDCount is the native runtime's default uid range size,
// as on Linux; checkUIDCount reads it, and no native sandbox starts here.
const nativeDefaultUIDCount = 65536

// checkNativeUIDRange accepts any uid range: the native runtime, whose
// range it is, does not run on this system.
func checkNativeUIDRange(base, count int) error { return nil }

// closeInherited does nothing: this system starts no sandbox's init, the
// children close-on-exec protects on Linux.
func closeInherited() error { return nil }

// nativeCommands are none: bench measures the native runtime.
func nativeCommands() []*cobra.Command { return nil }

// startNativeImage refuses: the native runtime needs Linux.
func startNativeImage(rootfs, built, store string, s runtimeSettings) (*imageRuntime, error) {
	return nil, platformError(errNativeNeedsLinux)
}
