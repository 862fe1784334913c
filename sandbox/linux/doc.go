// Package linux is Crucible's native sandbox runtime: each run gets a fresh
// sandbox made of Linux namespaces, a cgroup, rlimits, an unprivileged
// user, no capabilities, no_new_privs and a seccomp filter.
//
// The host side (runtime.go) creates the run's cgroup, clones its own binary
// into new PID, mount, network, IPC and UTS namespaces, moves it into the
// cgroup, and sends it the configuration on a private pipe. The sandbox
// side (init.go, mounts.go, seccomp.go) runs as that clone's PID 1: it
// builds a root filesystem from read-only bind mounts and a size-capped
// tmpfs, pivots into it, detaches the host's root, applies the limits and
// filters, and forks the program as the sandbox user. When the program
// exits, init exits, and the kernel kills whatever else is left in the PID
// namespace: nothing of a run survives it.
//
// Programs that import this package must let it run first: its init
// function takes over the process when started as the sandbox's init.
// Creating namespaces and cgroups requires root (see New).
package linux
