package docker

import (
	"encoding/json"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGVisorSeccomp checks the profile a gvisor run gets against the one
// a docker run gets: every refusal with ENOSYS, the default included, is
// SCMP_ACT_TRACE (runsc would answer EPERM for SCMP_ACT_ERRNO), every
// other rule is kept as it is, and personality's unlisted values are
// refused by a rule of their own after the allowed ones.
func TestGVisorSeccomp(t *testing.T) {
	base, err := seccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	g, err := gvisorSeccomp(base)
	if err != nil {
		t.Fatal(err)
	}
	var from, to seccompProfile
	if err := json.Unmarshal([]byte(base), &from); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(g), &to); err != nil {
		t.Fatal(err)
	}
	if to.DefaultAction != "SCMP_ACT_TRACE" {
		t.Errorf("default action %q, want SCMP_ACT_TRACE", to.DefaultAction)
	}
	if len(to.Syscalls) != len(from.Syscalls)+1 {
		t.Fatalf("%d rules, want the docker profile's %d and one for personality", len(to.Syscalls), len(from.Syscalls))
	}
	traced := 0
	for i, r := range from.Syscalls {
		got := to.Syscalls[i]
		enosys := r.Action == "SCMP_ACT_ERRNO" && r.ErrnoRet != nil && *r.ErrnoRet == uint(unix.ENOSYS)
		switch {
		case enosys && (got.Action != "SCMP_ACT_TRACE" || got.ErrnoRet != nil):
			t.Errorf("rule %d (%v): %s errno %v, want SCMP_ACT_TRACE", i, r.Names, got.Action, got.ErrnoRet)
		case enosys:
			traced++
		case got.Action != r.Action || !slices.Equal(got.Names, r.Names) || !slices.Equal(got.Args, r.Args):
			t.Errorf("rule %d (%v) changed: %+v, want %+v", i, r.Names, got, r)
		}
		if !slices.Equal(got.Names, r.Names) {
			t.Errorf("rule %d names %v, want %v", i, got.Names, r.Names)
		}
	}
	if traced == 0 {
		t.Errorf("no rule refused with ENOSYS in the docker profile: the test checks nothing")
	}
	last := to.Syscalls[len(to.Syscalls)-1]
	if !slices.Equal(last.Names, []string{"personality"}) || last.Action != "SCMP_ACT_ERRNO" || len(last.Args) != 0 {
		t.Errorf("last rule %+v, want personality refused (SCMP_ACT_ERRNO) whatever its argument", last)
	}
	for i, r := range to.Syscalls[:len(to.Syscalls)-1] {
		if slices.Contains(r.Names, "personality") && r.Action != "SCMP_ACT_ALLOW" {
			t.Errorf("rule %d refuses personality before the allowed values' rules: %+v", i, r)
		}
	}
	if _, err := gvisorSeccomp(`{"defaultAction": "SCMP_ACT_ALLOW"}`); err == nil {
		t.Errorf("a profile that allows by default was adapted, want an error")
	}
}
