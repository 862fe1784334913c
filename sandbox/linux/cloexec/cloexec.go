// Package cloexec marks a process's descriptors close-on-exec, so that
// none it inherited or opened reaches the programs it starts but those it
// hands them on purpose (os/exec's Stdin, Stdout, Stderr and ExtraFiles,
// os.StartProcess's Files, which the child gets with the flag cleared).
//
// It uses the standard library alone: the sandbox's init
// (package sandboxinit) calls it, and links nothing else.
package cloexec

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// sysCloseRange is close_range(2)'s number, the same on amd64 and arm64;
// the syscall package has no constant for it.
const sysCloseRange = 436

// closeRangeCloexec is CLOSE_RANGE_CLOEXEC (linux/close_range.h): mark
// the range close-on-exec instead of closing it.
const closeRangeCloexec = 1 << 2

// From marks every open descriptor numbered first or more close-on-exec:
// with one close_range call, or, on a kernel older than 5.11, which lacks
// CLOSE_RANGE_CLOEXEC, one fcntl per descriptor /proc/self/fd lists.
func From(first int) error {
	_, _, errno := syscall.RawSyscall(sysCloseRange, uintptr(first), uintptr(^uint32(0)), closeRangeCloexec)
	switch errno {
	case 0:
		return nil
	case syscall.ENOSYS, syscall.EINVAL:
		return eachFrom(first)
	}
	return os.NewSyscallError("close_range", errno)
}

// eachFrom is From, one descriptor at a time.
func eachFrom(first int) error {
	fds, err := Descriptors()
	if err != nil {
		return err
	}
	var errs []error
	for _, fd := range fds {
		if fd < first {
			continue
		}
		if _, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, syscall.FD_CLOEXEC); errno != 0 && errno != syscall.EBADF {
			errs = append(errs, os.NewSyscallError("fcntl", errno))
		}
	}
	return errors.Join(errs...)
}

// Descriptors lists the process's open descriptors, as /proc/self/fd shows them
// (the descriptor that reads it included, though closed by then).
func Descriptors() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	fds := make([]int, 0, len(ents))
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds, nil
}

// IsCloseOnExec reports whether descriptor fd is open with close-on-exec.
func IsCloseOnExec(fd int) (bool, error) {
	flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if errno != 0 {
		return false, os.NewSyscallError("fcntl", errno)
	}
	return flags&syscall.FD_CLOEXEC != 0, nil
}
