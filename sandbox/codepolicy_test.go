package sandbox_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

func TestPolicyJSON(t *testing.T) {
	cases := []struct {
		in   string
		want sandbox.Policy
		err  string // a part of the error; "" for none
	}{
		{`"block"`, sandbox.Policy{Mode: sandbox.PolicyBlock}, ""},
		{`{"mode": "warn"}`, sandbox.Policy{Mode: sandbox.PolicyWarn}, ""},
		{`{"mode": "warn", "preset": "strict"}`, sandbox.Policy{Mode: sandbox.PolicyWarn, Preset: "strict"}, ""},
		{`{"mode": "warn", "presets": "strict"}`, sandbox.Policy{}, `unknown field "presets"`},
		{`42`, sandbox.Policy{}, "want a mode"},
		{`"paranoid"`, sandbox.Policy{}, `policy.mode: must be one of off, warn, block, got "paranoid"`},
		{`{"preset": "strict"}`, sandbox.Policy{}, `policy.mode: must be one of off, warn, block, got ""`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			var req sandbox.Request
			err := json.Unmarshal([]byte(`{"language": "python", "code": "1", "policy": `+tc.in+`}`), &req)
			if err == nil {
				err = req.Validate()
			}
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && *req.Policy != tc.want:
				t.Errorf("policy %+v, want %+v", *req.Policy, tc.want)
			}
		})
	}
}

func TestPolicyModeStricter(t *testing.T) {
	cases := []struct{ a, b, want sandbox.PolicyMode }{
		{"", "", sandbox.PolicyOff},
		{sandbox.PolicyOff, sandbox.PolicyWarn, sandbox.PolicyWarn},
		{sandbox.PolicyBlock, sandbox.PolicyWarn, sandbox.PolicyBlock},
		{sandbox.PolicyWarn, "", sandbox.PolicyWarn},
		{sandbox.PolicyWarn, "bogus", sandbox.PolicyWarn},
	}
	for _, tc := range cases {
		if got := tc.a.Stricter(tc.b); got != tc.want {
			t.Errorf("%q.Stricter(%q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestBoundFindings(t *testing.T) {
	long := strings.Repeat("é", sandbox.MaxSnippetRunes+10)
	fs := make([]sandbox.Finding, sandbox.MaxFindings+5)
	fs[0].Snippet = long
	got := sandbox.BoundFindings(fs)
	if len(got) != sandbox.MaxFindings || len([]rune(got[0].Snippet)) != sandbox.MaxSnippetRunes+1 {
		t.Errorf("%d findings, first snippet %d characters; want %d and %d (with the ellipsis)", len(got), len([]rune(got[0].Snippet)), sandbox.MaxFindings, sandbox.MaxSnippetRunes+1)
	}
}
