//go:build !windows

package swe

import "syscall"

// packOpenFlags open a file to pack without following a link and without
// blocking on a FIFO (see packFile).
const packOpenFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
