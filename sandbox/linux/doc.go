// Package linux is Crucible's native sandbox runtime: each run gets a fresh
// sandbox made of Linux namespaces, a cgroup, rlimits, an unprivileged
// user, no capabilities, no_new_privs and a seccomp filter.
//
// This package is the host side: it creates the run's cgroup, clones its
// own binary into new PID, mount, network, IPC and UTS namespaces, moves it
// into the cgroup, and sends it the configuration on a private pipe. The
// sandbox side, package sandboxinit, runs as that clone's PID 1: it
// builds a root filesystem from read-only bind mounts and a size-capped
// tmpfs, pivots into it, detaches the host's root, applies the limits and
// filters, and forks the program as the sandbox user. When the program
// exits, init exits, and the kernel kills whatever else is left in the PID
// namespace: nothing of a run survives it.
//
// A sandbox can be built before its request arrives (Options.Prestart):
// init then waits with the sandbox built but empty, and the request only
// adds the code and files, locks the sandbox down and starts the program.
// A Python sandbox can be kept further along, locked down with its
// interpreter running and Preload imported: for stateless runs
// (Options.Warm) or a session (Options.WarmSessions, warmsession.go). A
// warm sandbox for runs is a zygote slot (zygote.go): its interpreter
// forks once per run, the fork becomes the run (another user than the
// interpreter's, a cgroup of its own, fresh /work, /tmp and /dev/shm,
// random generators reseeded), and the slot is reset after each run and
// serves the next. The runs of one slot share the interpreter's str hash
// seed (hash() of a str is the same in each; a run that sets
// PYTHONHASHSEED is not served by a slot) and its address-space layout. With Options.SingleRunWarm a
// warm sandbox serves one run instead (warm.go).
//
// Any binary that imports this package can serve as a sandbox's init:
// sandboxinit's init function takes the process over when it is started
// under that name.
// Creating namespaces and cgroups requires root (see New).
package linux
