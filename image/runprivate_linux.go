package image

import (
	"context"
	"io"
	"os/exec"
	"syscall"
)

// errBuildNeedsLinux is nil: this is Linux, where images are built.
var errBuildNeedsLinux error

// runPrivate runs a build command in a private mount namespace: the mounts
// debootstrap and package scripts make (/proc, /sys in the target) vanish
// with the command, even when it fails half-way, and never reach the host.
func runPrivate(ctx context.Context, out io.Writer, argv []string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive"}
	cmd.Stdout, cmd.Stderr = out, out // the same writer: one goroutine writes to it
	// Go makes the new mount namespace's propagation private.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	return cmd.Run()
}
