package linux

import (
	"strings"
	"testing"
)

// zygoteStatus is a zygote's /proc/<pid>/status as a slot's check wants
// it (zygote user 61001, run user 61000), with the lines of fields
// replaced (a value "-" drops the line).
func zygoteStatus(fields map[string]string) string {
	lines := []string{
		"Name:\tpython3", "Umask:\t0022", "State:\tS (sleeping)", "Tgid:\t7", "Pid:\t7", "PPid:\t1",
		"Uid:\t61001\t61000\t61001\t61000", "Gid:\t61001\t61000\t61001\t61000", "FDSize:\t64", "Groups:\t",
		"NSpid:\t7", "VmRSS:\t61000 kB", "Threads:\t1",
		"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1",
		"Seccomp:\t2", "Seccomp_filters:\t1", "Speculation_Store_Bypass:\tthread vulnerable",
	}
	var out []string
	for _, l := range lines {
		name, _, _ := strings.Cut(l, ":")
		switch v, ok := fields[name]; {
		case !ok:
			out = append(out, l)
		case v != "-":
			out = append(out, name+":\t"+v)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// TestZygoteStatusProblem checks that a slot is refused unless its
// zygote holds exactly its two identities, no group, no capability in
// any set, no_new_privs and a seccomp filter.
func TestZygoteStatusProblem(t *testing.T) {
	cases := []struct {
		name   string
		fields map[string]string
		want   string // in the error; "" for none
	}{
		{"as it must be", nil, ""},
		{"bounding set kept", map[string]string{"CapBnd": "00000000000001c0"}, `CapBnd is "00000000000001c0", want "0000000000000000"`},
		{"effective capability", map[string]string{"CapEff": "0000000000000080"}, `CapEff is "0000000000000080"`},
		{"permitted capability", map[string]string{"CapPrm": "0000000000000040"}, `CapPrm is "0000000000000040"`},
		{"inheritable capability", map[string]string{"CapInh": "0000000000000100"}, `CapInh is "0000000000000100"`},
		{"ambient capability", map[string]string{"CapAmb": "0000000000000400"}, `CapAmb is "0000000000000400"`},
		{"root's full sets", map[string]string{"CapPrm": "000001ffffffffff", "CapEff": "000001ffffffffff", "CapBnd": "000001ffffffffff"},
			`CapPrm is "000001ffffffffff", want "0000000000000000"; CapEff is "000001ffffffffff", want "0000000000000000"; CapBnd is`},
		{"no no_new_privs", map[string]string{"NoNewPrivs": "0"}, `NoNewPrivs is "0", want "1"`},
		{"no seccomp filter", map[string]string{"Seccomp": "0"}, `Seccomp is "0", want "2"`},
		{"strict seccomp only", map[string]string{"Seccomp": "1"}, `Seccomp is "1", want "2"`},
		{"real uid the run user's", map[string]string{"Uid": "61000\t61000\t61001\t61000"}, `Uid is "61000 61000 61001 61000", want "61001 61000 61001 61000"`},
		{"effective gid root", map[string]string{"Gid": "61001\t0\t61001\t0"}, `Gid is "61001 0 61001 0"`},
		{"a supplementary group", map[string]string{"Groups": "0"}, `Groups is "0", want ""`},
		{"no ambient set shown", map[string]string{"CapAmb": "-"}, "CapAmb is missing"},
		{"no seccomp line", map[string]string{"Seccomp": "-", "NoNewPrivs": "-"}, "NoNewPrivs is missing; Seccomp is missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := zygoteStatusProblem(zygoteStatus(tc.fields), 61001, 61000)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("a zygote as it must be was refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("a zygote with %v was accepted", tc.fields)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}
