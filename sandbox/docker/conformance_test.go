//go:build crucible_docker

package docker_test

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
	"github.com/crucible-sandbox/crucible/sandbox/sandboxtest"
)

// TestConformance runs the conformance suite every runtime must pass
// against the docker and the gvisor runtime, on the datascience image.
func TestConformance(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			sandboxtest.RunWith(t, func(t *testing.T) sandbox.Runtime { return conformanceRuntime(t, r.oci) },
				sandboxtest.Options{UIDBase: docker.DefaultUIDBase, UIDCount: docker.DefaultUIDCount, NotApplicable: notApplicableTo(r.oci)})
		})
	}
}

// notApplicable are the cases of the suite that cannot apply to a
// container runtime, and why.
var notApplicable = map[string]string{
	"InputRejected": "its positive control watches for the run's cgroup as crucible/<pid>.<n>, the native runtime's name; " +
		"Docker names its containers' cgroups itself (docker/<container id>), so the control cannot see a valid run's (every refusal it checks passes)",
}
