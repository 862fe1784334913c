//go:build crucible_docker

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
// runtime beyond those of any container runtime, and why: each checks
// the host kernel's own state, which under gVisor the program never
// reaches (the sentry answers instead).
var gvisorNotApplicable = map[string]string{}
