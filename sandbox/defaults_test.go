package sandbox

import (
	"fmt"
	"testing"
)

// TestDefaultsAreCopies checks that what the package's configuration
// functions return is the caller's own: changing it leaves the next
// call's value, and so every other importer's, as it was.
func TestDefaultsAreCopies(t *testing.T) {
	cases := []struct {
		name   string
		get    func() any
		mutate func(v any)
	}{
		{"DefaultLimits", func() any { l := DefaultLimits(); return &l }, func(v any) { v.(*Limits).MemoryBytes = 1 }},
		{"DefaultSessionLimits", func() any { l := DefaultSessionLimits(); return &l }, func(v any) { v.(*Limits).MemoryBytes = 1 }},
		{"MaxLimits", func() any { l := MaxLimits(); return &l }, func(v any) { v.(*Limits).Processes = 1 << 40 }},
		{"Languages", func() any { return Languages() }, func(v any) { v.([]Language)[0] = "cobol" }},
		{"PolicyModes", func() any { return PolicyModes() }, func(v any) { v.([]PolicyMode)[2] = PolicyOff }},
		{"DefaultPorts", func() any { return DefaultPorts() }, func(v any) { v.([]int)[0] = 22 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := fmt.Sprint(tc.get()) // a snapshot, shared with nothing
			got := tc.get()
			tc.mutate(got)
			if fmt.Sprint(got) == want {
				t.Fatalf("the mutation changed nothing: %v", got)
			}
			if again := fmt.Sprint(tc.get()); again != want {
				t.Fatalf("after a caller changed its value, the next call returns %s, want %s", again, want)
			}
		})
	}
}
