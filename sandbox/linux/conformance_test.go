package linux_test

import (
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/sandbox/sandboxtest"
)

// TestConformance runs the conformance suite every runtime must pass
// against the native runtime on the host's own system directories: once
// building each sandbox when its run starts, once taking sandboxes from a
// pool built ahead of time (the suite closes the runtime at the end).
func TestConformance(t *testing.T) {
	testenv.Root(t)
	for _, tc := range []struct {
		name string
		opts linux.Options
	}{
		{"fresh", linux.Options{}},
		{"prestart", linux.Options{Prestart: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sandboxtest.RunWith(t, func(t *testing.T) sandbox.Runtime {
				rt, err := linux.New(tc.opts)
				if err != nil {
					t.Fatalf("linux.New: %v", err)
				}
				return rt
			}, defaultUIDs)
		})
	}
}

// defaultUIDs tells the suite the uids the runtime's sandboxes run as.
var defaultUIDs = sandboxtest.Options{UIDBase: linux.DefaultUIDBase, UIDCount: linux.DefaultUIDCount}
