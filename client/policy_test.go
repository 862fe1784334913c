package client_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestRunPolicy proves the SDK carries the request's policy field and
// answers the findings: block runs nothing, warn runs and reports.
func TestRunPolicy(t *testing.T) {
	c := newClient(t, nil)
	cases := []struct {
		mode   sandbox.PolicyMode
		status sandbox.Status
		stdout string
	}{
		{sandbox.PolicyBlock, sandbox.StatusBlocked, ""},
		{sandbox.PolicyWarn, sandbox.StatusOK, "ran\n"},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			req := py("print('ran')\nimport subprocess")
			req.Policy = &sandbox.Policy{Mode: tc.mode}
			res, err := c.CreateRun(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || string(res.Stdout) != tc.stdout || len(res.Findings) != 1 || res.Findings[0].Line != 2 {
				t.Errorf("status %s stdout %q findings %+v, want %s %q and one at line 2", res.Status, res.Stdout, res.Findings, tc.status, tc.stdout)
			}
		})
	}
}

// TestPolicyThroughRemoteRuntime proves a local service whose runtime is
// a remote server (the SDK as a service.Runtime) hands the remote the
// policy in force locally, not only what the request asked: under a local
// server policy of block, code the request sends with no policy is
// blocked by the remote, for a run and for a session's cell.
func TestPolicyThroughRemoteRuntime(t *testing.T) {
	remote := newClient(t, nil)
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	local, err := service.New(service.Config{Runtime: remote, Redactor: red, Policy: sandbox.Policy{Mode: sandbox.PolicyBlock},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Shutdown(context.Background())
	ctx := context.Background()
	run, err := local.Run(ctx, "acme", py("print('ran')\nimport socket"), service.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != sandbox.StatusBlocked || len(run.Stdout) != 0 || len(run.Findings) != 1 {
		t.Errorf("run: status %s stdout %q findings %+v, want blocked, nothing printed, one finding", run.Status, run.Stdout, run.Findings)
	}
	ss, err := local.OpenSession(ctx, "acme", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cell, err := ss.Exec(ctx, sandbox.Cell{Code: "import socket"})
	if err != nil {
		t.Fatal(err)
	}
	if cell.Status != sandbox.StatusBlocked || len(cell.Findings) != 1 {
		t.Errorf("cell: status %s findings %+v, want blocked with one finding", cell.Status, cell.Findings)
	}
}
