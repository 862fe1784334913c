package docker

// gvisorOOM is how a gvisor run ends at its memory limit. The program's
// memory is the memory of gVisor's sandbox kernel (the sentry), a host
// process in the container's memory cgroup; gVisor does not stop a task
// at the limit itself. The host kernel's OOM killer ends the biggest
// process of the cgroup, the sentry, and the whole sandbox with it: the
// exec reports 128 (runsc lost its sandbox) and the daemon records the
// container as OOMKilled (containerd's shim watches the cgroup's OOM
// events), which is the signal Run reads, as for runc. Nothing of the
// program survives to report an error of its own; the Result says what a
// runc run's says, the program ended by SIGKILL (the exec's 128 is
// runsc's, not the program's).
const gvisorOOM = "the host kernel's OOM killer ended the sandbox's kernel (gVisor's sentry), and the program with it"
