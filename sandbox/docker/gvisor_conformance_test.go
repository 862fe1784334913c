package docker_test

import (
	"context"
	"maps"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// conformanceRuntime is the runtime the conformance suite runs against
// for OCI runtime oci: under gVisor, wrapped so that the suite's host
// checks look at gVisor's machinery (gvisor_hostcheck_test.go).
func conformanceRuntime(t *testing.T, oci string) sandbox.Runtime {
	rt := newRuntime(t, oci)
	if oci != docker.GVisorRuntime {
		return rt
	}
	cli, err := docker.Connect(context.Background(), "")
	if err != nil {
		t.Fatalf("connect for the host checks: %v", err)
	}
	return newGVisorRuntime(rt, cli)
}

// notApplicableTo returns the cases of the suite that cannot apply to OCI
// runtime oci, and why.
func notApplicableTo(oci string) map[string]string {
	na := maps.Clone(notApplicable)
	if oci == docker.GVisorRuntime {
		maps.Copy(na, gvisorNotApplicable)
	}
	return na
}

// gvisorNotApplicable are the cases that cannot apply to the gvisor
// runtime beyond those of any container runtime, and why: each stands on
// a quota or a count of the host kernel's that a gvisor program never
// reaches, its own kernel (the sentry) answering instead. What each case
// guards is checked for gVisor in a test of its own where it can be.
var gvisorNotApplicable = map[string]string{
	"PerSandboxQuotas": "it guards the host kernel's per-user quotas (inotify instances, pending signals, message-queue bytes, pipe pages) that two sandboxes of one host share; " +
		"under gVisor every sandbox has its own kernel, the sentry, whose counts no other sandbox shares, and its holder program cannot even run: " +
		"it opens inotify instances until Linux's fs.inotify.max_user_instances (128) stops it, a limit the sentry does not have, so it runs out of file descriptors first (EMFILE) and exits",
	"SocketMemory": "it reads the host kernel's socket memory (/proc/net/sockstat) and expects the kernel's socket-buffer limit (memory.kmem.tcp) to make sends fail while the program keeps running; " +
		"under gVisor the program's loopback sockets are the sentry's own network stack, whose buffers are sentry memory charged to the container's memory limit: " +
		"the host's socket memory does not move, and queues filled past the limit end the run as memory_limit. TestGVisorSocketMemory checks both",
}

// unnamedCallsTo returns the calls the policy denies that OCI runtime
// oci's seccomp filter cannot name, and why.
func unnamedCallsTo(oci string) map[string]string {
	if oci != docker.GVisorRuntime {
		return unnamedCalls
	}
	u := maps.Clone(unnamedCalls)
	for _, c := range []string{"process_madvise", "mount_setattr", "quotactl_fd", "open_tree_attr"} {
		u[c] = "gVisor's sentry has no entry for it in its system-call table, so runsc drops the profile's rule that names it " +
			"and the call gets the profile's default action, SCMP_ACT_TRACE: ENOSYS, refused before the sentry runs anything (gvisor_seccomp.go)"
	}
	return u
}

// gvisorFamilyRefusal is why a gvisor run's refused socket families fail
// with EPERM.
const gvisorFamilyRefusal = "runsc reads a seccomp profile's SCMP_ACT_ERRNO as EPERM whatever its errnoRet " +
	"(runsc/specutils/seccomp: errnoAction = ReturnError.Code(EPERM)), so the family rules refuse with EPERM where runc answers EAFNOSUPPORT or EPROTONOSUPPORT"

// gvisorOnly returns s for the gvisor runtime and "" for any other.
func gvisorOnly(oci, s string) string {
	if oci == docker.GVisorRuntime {
		return s
	}
	return ""
}
