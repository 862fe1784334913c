package service_test

import (
	"context"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestSessionRestartCounted proves, on the native runtime, that a session
// the service opens with no limits gets the sessions' defaults, and that
// a cell that runs its interpreter out of memory leaves the session open,
// listed, and counting the restart; the next cell runs.
func TestSessionRestartCounted(t *testing.T) {
	svc := newService(t, nativeRuntime(t), nil)
	ctx := context.Background()
	ss, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if got, want := ss.Info().Limits, sandbox.DefaultSessionLimits().WithSessionDefaults(); got != want {
		t.Fatalf("a session opened with no limits has %+v, want the sessions' defaults %+v", got, want)
	}
	small, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Limits: sandbox.Limits{MemoryBytes: 128 * sandbox.MiB}}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	resp, err := small.ExecRecorded(ctx, sandbox.Cell{Code: "b = bytearray()\nwhile True:\n    b += bytes(1 << 20)", TimeoutMS: 50_000})
	if err != nil || resp.Status != sandbox.StatusMemoryLimit || !resp.Restarted {
		t.Fatalf("want memory_limit and a restart, got %v, %+v", err, resp.Result)
	}
	if info := small.Info(); info.Restarts != 1 || info.Cells != 1 {
		t.Errorf("after the restart the session says %d restarts, %d cells; want 1 and 1", info.Restarts, info.Cells)
	}
	if _, err := svc.Session("t", small.ID()); err != nil {
		t.Errorf("the restarted session is no longer found: %v", err)
	}
	if resp, err := small.ExecRecorded(ctx, sandbox.Cell{Code: "1 + 1"}); err != nil || resp.Value != "2" {
		t.Errorf("the next cell: %v, %+v", err, resp.Result)
	}
}
