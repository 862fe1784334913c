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
//   - docker-init (Init) as PID 1, which reaps orphans.
//
// The container starts with a waiting process; the input files and the
// program's file are copied into its volumes through the API's archive
// upload, the program is started with an exec whose environment is
// exactly the language's (env -i), its output read as it streams and cut
// at the output limit, and the artifacts read back through the archive
// download, which never follows links. The container and its volumes are
// removed before Run returns. See container.go for the configuration and
// why each setting is there.
//
// Under gVisor (the runsc that scripts/dockerd.sh builds and registers,
// with --oci-seccomp) three things differ, each in a gvisor*.go file: the
// seccomp profile is adapted to runsc's reading of it (gvisor_seccomp.go),
// the program's output goes through a relay of sentry pipes because the
// sentry's writes to the exec's host pipes can be short (gvisor_relay.go),
// and a run that reaches its memory limit ends with the whole sandbox,
// which the host's OOM killer ends (gvisor_memory.go).
package docker
