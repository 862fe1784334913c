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

// TestPresetsAreCopies checks that a preset a caller got (from Strict or
// Lookup) is its own: changing it changes neither the next call's nor
// what another request is checked against.
func TestPresetsAreCopies(t *testing.T) {
	get := map[string]func() *codecheck.Preset{
		"Strict": func() *codecheck.Preset { p := codecheck.Strict(); return &p },
		"Lookup": func() *codecheck.Preset {
			p, err := codecheck.Lookup("policy.preset", "strict")
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
	}
	for name, preset := range get {
		t.Run(name, func(t *testing.T) {
			p := preset()
			p.PythonModules[0] = "harmless"
			p.BashCommands = p.BashCommands[:0]
			p.Name = "lax"
			for _, again := range []*codecheck.Preset{get["Strict"](), get["Lookup"]()} {
				if again.Name != "strict" || again.PythonModules[0] != "os" || len(again.BashCommands) == 0 {
					t.Fatalf("after a caller changed its preset, the next is %s with modules %v and commands %v", again.Name, again.PythonModules[:3], again.BashCommands)
				}
			}
		})
	}
}
