package cloexec

import (
	"slices"
	"syscall"
	"testing"
)

// TestFrom checks, for close_range and for its fallback, that every
// descriptor from first up ends close-on-exec and those below first keep
// their flag, whichever they had.
func TestFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		mark func(first int) error
	}{
		{"close_range", From},
		{"one by one", eachFrom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fds []int // without close-on-exec, ascending
			for range 4 {
				fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer syscall.Close(fd)
				fds = append(fds, fd)
			}
			first := fds[2]
			if err := tc.mark(first); err != nil {
				t.Fatal(err)
			}
			open, err := Descriptors()
			if err != nil {
				t.Fatal(err)
			}
			for _, fd := range fds {
				if !slices.Contains(open, fd) {
					t.Errorf("fd %d is not listed as open: %v", fd, open)
				}
				set, err := IsCloseOnExec(fd)
				if err != nil {
					t.Fatal(err)
				}
				if want := fd >= first; set != want {
					t.Errorf("fd %d: close-on-exec %v, want %v (first %d)", fd, set, want, first)
				}
			}
		})
	}
}
