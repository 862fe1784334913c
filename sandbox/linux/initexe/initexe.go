// Package initexe gives the native runtime the executable it starts as a
// sandbox's init.
//
// A crucible built with the build tag crucible_initexe embeds the small
// crucible-init binary (cmd/crucible-init, built into this directory by
// scripts/setup.sh first). Sandboxes then start from it: it links only
// package sandboxinit, so it starts in about 7 ms instead of the 17 ms the
// whole crucible binary takes to reach sandboxinit's hook, and an idle
// warm sandbox's init holds a few MiB less. Without the tag (a plain `go
// build` or `go install`), crucible re-executes itself: the same code, a
// slower start.
package initexe

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Path returns the path of the executable to start as a sandbox's init:
// the embedded crucible-init, or this process's own binary.
//
// The embedded binary is copied once into a sealed memfd that lives as long
// as the process: no file on disk can be swapped under the runtime, and
// the seals make the copy immutable, so not even a process that got hold
// of the descriptor could alter what later sandboxes run (the attack of
// CVE-2019-5736 on runc). The path names the descriptor in this process's
// /proc/<pid>/fd, not /proc/self/fd: the child that execs it has already
// moved its own pipes onto the low descriptor numbers, one of which may be
// the memfd's number here.
func Path() (string, error) { return path() }

// Embedded reports whether this binary carries crucible-init.
func Embedded() bool { return len(embedded) > 0 }

var path = sync.OnceValues(func() (string, error) {
	if !Embedded() {
		return "/proc/self/exe", nil
	}
	fd, err := unix.MemfdCreate("crucible-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return "", fmt.Errorf("initexe: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "crucible-init")
	if _, err := f.Write(embedded); err != nil {
		f.Close()
		return "", fmt.Errorf("initexe: write memfd: %w", err)
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return "", fmt.Errorf("initexe: seal memfd: %w", err)
	}
	// f stays open (and referenced, so never finalized) for the process's
	// life: every sandbox is started from it.
	memfd = f
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd()), nil
})

// memfd keeps the descriptor of the embedded copy alive.
var memfd *os.File
