//go:build !linux

package main

import "runtime"

// checkNative says the native runtime is missing: it needs Linux.
func checkNative() runtimeCheck {
	return runtimeCheck{Name: runtimeNative, Missing: []string{"Linux: the native runtime is made of Linux's namespaces, cgroups and seccomp; this is " + runtime.GOOS},
		Fix: []string{"use --runtime docker (or gvisor), or run crucible on a Linux host"}}
}
