package docker_test

import (
	"maps"

	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// notApplicableFor is notApplicable with the cases that cannot apply to
// the OCI runtime oci alone, and why.
func notApplicableFor(oci string) map[string]string {
	m := maps.Clone(notApplicable)
	if oci == docker.GVisorRuntime {
		m["SessionMemoryRestart"] = "under gVisor the sandbox's own kernel (the sentry) holds every process's memory in the container's memory cgroup: " +
			"at the limit the host's OOM killer ends the sentry, and with it every process of the session and its tmpfs /work " +
			"(the container exits 137, OOMKilled), so no interpreter can be restarted in the same sandbox with the files kept; " +
			"the cell ends as memory_limit and the session is closed, which TestSessionOOM checks"
	}
	return m
}
