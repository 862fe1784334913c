//go:build linux

package docker

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLinuxSignalNames: the runtime's own table of Linux's signals
// (linuxsignal.go) names each as package unix does on Linux.
func TestLinuxSignalNames(t *testing.T) {
	for n := 0; n <= 64; n++ {
		if got, want := linuxSignalName(n), unix.SignalName(syscall.Signal(n)); got != want {
			t.Errorf("linuxSignalName(%d) = %q, unix.SignalName = %q", n, got, want)
		}
	}
	if sigKILL != int(unix.SIGKILL) || sigXCPU != int(unix.SIGXCPU) || sigXFSZ != int(unix.SIGXFSZ) {
		t.Errorf("sigKILL, sigXCPU, sigXFSZ = %d, %d, %d; Linux's are %d, %d, %d", sigKILL, sigXCPU, sigXFSZ, unix.SIGKILL, unix.SIGXCPU, unix.SIGXFSZ)
	}
}
