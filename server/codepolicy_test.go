package server_test

import (
	"net/http"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestRunPolicyField proves the API's "policy" field in both its forms,
// on the real sandbox: "block" as a mode alone, {"mode": ..., "preset":
// ...} as an object; the answer and the record carry the findings and
// the policy applied; a mode or preset that does not exist is a 400
// naming the field.
func TestRunPolicyField(t *testing.T) {
	ts := newTestServer(t, nil)
	cases := []struct {
		name     string
		policy   any
		status   sandbox.Status
		stdout   string
		findings int
	}{
		{"mode alone", "block", sandbox.StatusBlocked, "", 1},
		{"object", map[string]any{"mode": "warn", "preset": "strict"}, sandbox.StatusOK, "ran\n", 1},
		{"off", "off", sandbox.StatusOK, "ran\n", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := python("print('ran')\nfrom socket import socket")
			req["policy"] = tc.policy
			rr := ts.run("/v1/runs", req)
			if rr.Status != tc.status || string(rr.Stdout) != tc.stdout || len(rr.Findings) != tc.findings {
				t.Fatalf("status %s stdout %q findings %v, want %s %q and %d", rr.Status, rr.Stdout, rr.Findings, tc.status, tc.stdout, tc.findings)
			}
			if tc.findings > 0 {
				f := rr.Findings[0]
				if f.Rule != "blocked-import" || f.Line != 2 || f.Column != 1 || f.Snippet != "from socket import socket" {
					t.Errorf("finding %+v, want blocked-import at 2:1 quoting the line", f)
				}
			}
			rec := ts.record(rr.ID)
			if rec.Status != tc.status || len(rec.Findings) != tc.findings {
				t.Errorf("record: status %s findings %v", rec.Status, rec.Findings)
			}
		})
	}
	for _, bad := range []struct {
		policy any
		field  string
	}{
		{"strictest", "policy.mode"},
		{map[string]any{"mode": "block", "preset": "lax"}, "policy.preset"},
	} {
		req := python("print(1)")
		req["policy"] = bad.policy
		if e := ts.do("POST", "/v1/runs", req).wantError(t, http.StatusBadRequest, "invalid_request"); e.Error.Field != bad.field {
			t.Errorf("policy %v: error names %q, want %q", bad.policy, e.Error.Field, bad.field)
		}
	}
}
