//go:build !linux

package main

import (
	"errors"
	"io/fs"
	"net"
)

// peerUID fails: the local socket serves the native runtime's runs, and
// this system has none (so no caller is ever taken for this user).
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("the local socket serves the native runtime, which needs Linux")
}

// fileOwnerUID says the owner is unknown: no socket is taken for this
// user's (see peerUID).
func fileOwnerUID(fs.FileInfo) (int, bool) { return -1, false }
