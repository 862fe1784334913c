package service_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
)

// nativeRuntime returns a native runtime in the default root, closed
// when tb ends; it needs root.
func nativeRuntime(tb testing.TB) *linux.Runtime {
	tb.Helper()
	testenv.Root(tb)
	rt, err := linux.New(linux.Options{})
	if err != nil {
		tb.Fatalf("linux.New: %v", err)
	}
	tb.Cleanup(func() { _ = rt.Close() })
	return rt
}

// findingsOf formats findings as "rule@line:col" joined by spaces.
func findingsOf(fs []sandbox.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule+"@"+strconv.Itoa(f.Line)+":"+strconv.Itoa(f.Column))
	}
	return strings.Join(out, " ")
}

// TestCodePolicy proves the service decides the policy for every caller
// (the strictest of the server's, the tenant's, the agents' warn and the
// request's: a request can only tighten) and applies it on the real
// sandbox: Python checked in the sandbox, JavaScript and bash on the
// host; block runs nothing, warn runs and keeps the findings, and the
// run's record holds both.
func TestCodePolicy(t *testing.T) {
	rt := nativeRuntime(t)
	svc := newService(t, rt, func(c *service.Config) {
		c.Tenants = map[string]service.TenantLimits{"locked": {Policy: sandbox.PolicyBlock}, "careful": {Policy: sandbox.PolicyWarn}}
	})
	strictSvc := newService(t, rt, func(c *service.Config) { c.Policy = sandbox.Policy{Mode: sandbox.PolicyBlock} })
	const pySocket = "print('ran')\nimport socket"
	mode := func(m sandbox.PolicyMode) *sandbox.Policy { return &sandbox.Policy{Mode: m} }
	type want struct {
		status   sandbox.Status
		stdout   string
		findings string
		policy   sandbox.PolicyMode // "" when none applied
	}
	blocked := want{sandbox.StatusBlocked, "", "blocked-import@2:1", sandbox.PolicyBlock}
	warned := want{sandbox.StatusOK, "ran\n", "blocked-import@2:1", sandbox.PolicyWarn}
	cases := []struct {
		name   string
		svc    *service.Service
		tenant string
		req    sandbox.Request
		agent  bool
		want   want
	}{
		{"default is off", svc, "acme", py(pySocket), false, want{sandbox.StatusOK, "ran\n", "", ""}},
		{"request warn", svc, "acme", sandbox.Request{Language: sandbox.Python, Code: pySocket, Policy: mode(sandbox.PolicyWarn)}, false, warned},
		{"request block", svc, "acme", sandbox.Request{Language: sandbox.Python, Code: pySocket, Policy: mode(sandbox.PolicyBlock)}, false, blocked},
		{"agents warn by default", svc, "acme", py(pySocket), true, warned},
		{"tenant block, request warn: block", svc, "locked", sandbox.Request{Language: sandbox.Python, Code: pySocket, Policy: mode(sandbox.PolicyWarn)}, false, blocked},
		{"tenant warn, request block: block", svc, "careful", sandbox.Request{Language: sandbox.Python, Code: pySocket, Policy: mode(sandbox.PolicyBlock)}, false, blocked},
		{"server block, request off: block", strictSvc, "acme", sandbox.Request{Language: sandbox.Python, Code: pySocket, Policy: mode(sandbox.PolicyOff)}, false, blocked},
		{"server block, clean code runs", strictSvc, "acme", py("print('ran')"), false, want{sandbox.StatusOK, "ran\n", "", sandbox.PolicyBlock}},
		{"javascript require, block", svc, "acme", sandbox.Request{Language: sandbox.JavaScript, Code: "console.log('ran');\nconst cp = require('node:child_process');", Policy: mode(sandbox.PolicyBlock)}, false,
			want{sandbox.StatusBlocked, "", "blocked-import@2:20", sandbox.PolicyBlock}},
		{"javascript import, warn", svc, "acme", sandbox.Request{Language: sandbox.JavaScript, Code: "console.log('ran');\nimport('fs').catch(() => {});", Policy: mode(sandbox.PolicyWarn)}, false,
			want{sandbox.StatusOK, "ran\n", "blocked-import@2:8", sandbox.PolicyWarn}},
		{"bash curl, block", svc, "acme", sandbox.Request{Language: sandbox.Bash, Code: "echo ran\ncurl https://example.com", Policy: mode(sandbox.PolicyBlock)}, false,
			want{sandbox.StatusBlocked, "", "blocked-command@2:1", sandbox.PolicyBlock}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := service.RunOptions{}
			if tc.agent {
				opts.AgentRun = "agr_test"
			}
			resp, err := tc.svc.Run(context.Background(), tc.tenant, tc.req, opts)
			if err != nil {
				t.Fatal(err)
			}
			var applied sandbox.PolicyMode
			if resp.Policy != nil {
				applied = resp.Policy.Mode
			}
			got := want{resp.Status, string(resp.Stdout), findingsOf(resp.Findings), applied}
			if got != tc.want {
				t.Errorf("got %+v, want %+v (reason %q, findings %v)", got, tc.want, resp.Reason, resp.Findings)
			}
			rec, err := tc.svc.Get(context.Background(), tc.tenant, resp.ID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != resp.Status || findingsOf(rec.Findings) != tc.want.findings {
				t.Errorf("record: status %s findings %q, want %s %q", rec.Status, findingsOf(rec.Findings), resp.Status, tc.want.findings)
			}
		})
	}
}

// TestCodePolicyInputErrors proves a request's policy that names no mode
// or no preset is an input error naming the field, before anything runs.
func TestCodePolicyInputErrors(t *testing.T) {
	svc := newService(t, &fakeRuntime{}, nil)
	cases := []struct {
		name  string
		pol   sandbox.Policy
		field string
	}{
		{"unknown mode", sandbox.Policy{Mode: "strictest"}, "policy.mode"},
		{"unknown preset", sandbox.Policy{Mode: sandbox.PolicyBlock, Preset: "lax"}, "policy.preset"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := py("print(1)")
			req.Policy = &tc.pol
			_, err := svc.Run(context.Background(), "acme", req, service.RunOptions{})
			var ie *sandbox.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("Run = %v, want an input error naming %s", err, tc.field)
			}
			_, err = svc.OpenSession(context.Background(), "acme", sandbox.SessionRequest{Language: sandbox.Python, Policy: &tc.pol}, service.SessionOptions{})
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("OpenSession = %v, want an input error naming %s", err, tc.field)
			}
		})
	}
}

// TestCodePolicySession proves a session's cells are checked under the
// session's policy, in the real kernel: a blocked cell runs nothing and
// is recorded with its findings, and the session goes on.
func TestCodePolicySession(t *testing.T) {
	svc := newService(t, nativeRuntime(t), nil)
	ss, err := svc.OpenSession(context.Background(), "acme", sandbox.SessionRequest{Language: sandbox.Python, Policy: &sandbox.Policy{Mode: sandbox.PolicyBlock}}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cells := []struct {
		code     string
		status   sandbox.Status
		findings string
		value    string
	}{
		{"n = 1\nimport os\nos.system('id')", sandbox.StatusBlocked, "blocked-import@2:1", ""},
		{"'n' in dir()", sandbox.StatusOK, "", "False"},
		{"getattr(1, '__class__')", sandbox.StatusBlocked, "evasion-getattr@1:1", ""},
		{"sum(range(4))", sandbox.StatusOK, "", "6"},
	}
	for _, c := range cells {
		res, err := ss.Exec(context.Background(), sandbox.Cell{Code: c.code})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != c.status || findingsOf(res.Findings) != c.findings || res.Value != c.value {
			t.Errorf("cell %q: %s %q value %q, want %s %q value %q", c.code, res.Status, findingsOf(res.Findings), res.Value, c.status, c.findings, c.value)
		}
		if res.Policy == nil || res.Policy.Mode != sandbox.PolicyBlock {
			t.Errorf("cell %q: policy %+v, want block", c.code, res.Policy)
		}
	}
}
