package e2e

import (
	"path/filepath"
	"testing"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/sandbox/sandboxtest"
)

// TestRemoteConformance runs the conformance suite every runtime passes
// (sandbox/sandboxtest: hostile programs, limits, languages, refused
// requests, streamed output, concurrency, cancellation) with the SDK as the
// runtime, against a `crucible serve` process with a fresh SQLite store.
// It proves that a program run through the HTTP API means what it means on
// the native runtime, and that the client keeps the sandbox.Runtime
// contract: the same statuses, output and errors, and a cancelled run is
// killed on the server before Run returns.
//
// The host checks are the suite's own, with one difference: the runs'
// cgroups are named after the server's pid, not this process's. The server
// runs without the built-in redaction patterns, a policy of the service
// layered on the runtime: they would rightly hide the suite's marker, which
// the programs print from a variable named SANDBOXTEST_TOKEN, as a secret
// (the redaction itself is TestServeEndpoints' to prove). Its one tenant
// may use every run place, not the fair share of half a tenant gets by
// default: the suite sends 50 runs at once.
func TestRemoteConformance(t *testing.T) {
	srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"),
		configFlag(t, `{"redact": {"patterns": false}, "max_queue": 64, "tenant_defaults": {"max_concurrent_runs": 128}}`)...)
	sandboxtest.RunWith(t, func(t *testing.T) sandbox.Runtime {
		// No client timeout: the suite bounds every run with its context.
		c, err := client.New(srv.URL)
		if err != nil {
			t.Fatalf("client.New(%q): %v", srv.URL, err)
		}
		return c
	}, sandboxtest.Options{CgroupOwnerPID: srv.PID(), UIDBase: linux.DefaultUIDBase, UIDCount: linux.DefaultUIDCount})
}
