// Package docker runs sandboxes as Docker containers, through the Docker
// Engine API: the "docker" runtime with Docker's default OCI runtime
// (runc, the host's kernel behind namespaces, cgroups and seccomp), and the
// "gvisor" runtime with gVisor's runsc, which puts a second kernel (the
// gVisor sentry) between the program and the host's.
//
// It implements sandbox.Runtime with the same contract and the same Result
// as the native runtime (package sandbox/linux). Each run gets a container
// of its own:
//
//   - no network (NetworkMode "none"), a read-only root filesystem, every
//     capability dropped, no-new-privileges, a seccomp profile generated
//     from the native runtime's own system-call policy (seccomp.go);
//   - an unprivileged uid of its own from a reserved range (uids.go);
//   - memory (swap equal: none), pids and CPU limits, and rlimits (cpu,
//     fsize, nofile, nproc, core);
//   - /work and /code on size-capped tmpfs volumes the daemon makes and
//     removes with the container, /tmp a size-capped noexec tmpfs; no host
//     directory is mounted;
//   - docker-init (Init) as PID 1, which reaps orphans;
//   - made-up /proc/meminfo and /proc/stat, the native sandbox's, bound
//     read-only from the daemon's volume crucible-kernelview
//     (kernelview.go); under cgroup v1 the socket-buffer limit written
//     from the host, which runc 1.1 ignores (sockmem.go).
//
// Every container and volume of a run is labelled with the process that
// made it; New removes those of processes that have ended (sweep.go).
//
// The container starts with a waiting process; the input files and the
// program's file are copied into its volumes through the API's archive
// upload, the program is started with an exec whose environment is
// exactly the language's (env -i), under a shell that kills what it left
// running once it ends, its output read as it streams and cut
// at the output limit, and the artifacts read back through the archive
// download, which never follows links. The container and its volumes are
// removed before Run returns. See container.go for the configuration and
// why each setting is there.
//
// With Options.Prestart, a Runtime keeps that many containers created and
// started ahead of the requests (pool.go), with the default limits; a run
// whose limits fit takes one, uses it once and leaves it to be removed in
// the background while a replacement is made. A pooled run skips the
// container's create and start and every other call that costs the daemon
// a helper process: its waiting process is an agent that writes the
// program's file and says whether /work is empty (agent.go), and its
// program is started by a launcher exec made with the container
// (launcher.go). Containers of a pool are labelled with their owner
// process, so that a crashed one's are swept (poolowner.go, SweepPools).
//
// A run with a network allowlist finds the host's egress proxy on its
// container's loopback, reached as in the native runtime (egress.go);
// under gVisor an allowlist is refused as bad input naming the field
// network: gVisor's own network stack cannot reach the proxy.
//
// Sessions (session.go) run the native runtime's Python kernel (package
// kernel) in a container of their own, with the same hardening, for the
// session's life: the kernel runs in an exec under a small multiplexer
// (sessionmux.py) that carries its request and reply channels, stdout and
// stderr over the exec's one ordered stream, so that a cell's output is
// what arrived before its reply, as the native runtime reads it from its
// pipes. The container is paused between cells, and a file operation
// (through the archive API, links refused) runs with it paused, after any
// running cell. A cell that runs the interpreter out of memory restarts it
// in the same container under docker; under gVisor the whole sandbox dies
// with it, and the session ends.
package docker
