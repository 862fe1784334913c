//go:build linux

package sandbox

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSignalNames: the contract's table of Linux's signals names each as
// package unix does on Linux, both ways.
func TestSignalNames(t *testing.T) {
	for n := 0; n <= 64; n++ {
		name := unix.SignalName(syscall.Signal(n))
		if got := SignalName(n); got != name {
			t.Errorf("SignalName(%d) = %q, unix.SignalName = %q", n, got, name)
		}
		if got, ok := SignalNumber(name); name != "" && (!ok || got != n) {
			t.Errorf("SignalNumber(%q) = %d, %v; want %d", name, got, ok, n)
		}
	}
	if SIGKILL != int(unix.SIGKILL) || SIGXCPU != int(unix.SIGXCPU) || SIGXFSZ != int(unix.SIGXFSZ) {
		t.Errorf("SIGKILL, SIGXCPU, SIGXFSZ = %d, %d, %d; Linux's are %d, %d, %d", SIGKILL, SIGXCPU, SIGXFSZ, unix.SIGKILL, unix.SIGXCPU, unix.SIGXFSZ)
	}
}
