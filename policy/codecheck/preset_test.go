package codecheck_test

import (
	"testing"

	"github.com/crucible-sandbox/crucible/policy/codecheck"
)

func TestLookup(t *testing.T) {
	cases := []struct {
		name, preset, want string
	}{
		{"default", "", "strict"},
		{"strict", "strict", "strict"},
		{"unknown", "lax", `invalid request: policy.preset: must name a preset, one of strict; got "lax"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := codecheck.Lookup("policy.preset", tc.preset)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = p.Name
			}
			if got != tc.want {
				t.Errorf("Lookup(%q) = %q, want %q", tc.preset, got, tc.want)
			}
		})
	}
}
