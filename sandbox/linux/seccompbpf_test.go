package linux

import (
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

func TestBuildFilterRefusesBadSpecs(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec filterSpec
		want string // in the error
	}{
		{"unknown ruled call", filterSpec{argRules: []callRules{{name: "nope", rules: []argRule{{}}}}}, `"nope"`},
		{"no rules", filterSpec{argRules: []callRules{{name: "socket"}}}, "socket must end with one that has no check"},
		{"no final rule", filterSpec{argRules: []callRules{{name: "socket", rules: []argRule{
			{checks: []argCheck{argEqual(0, 1)}},
		}}}}, "socket must end with one that has no check"},
		{"argument 6", filterSpec{argRules: []callRules{{name: "socket", rules: []argRule{
			{checks: []argCheck{argEqual(6, 1)}}, {},
		}}}}, "argument 6 out of 0-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := buildFilter(arch.X86_64, tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A listed call the architecture lacks is left out, not an error: the
// same policy serves amd64 and arm64.
func TestBuildFilterSkipsForeignCalls(t *testing.T) {
	spec := filterSpec{lists: []callList{{names: []string{"read", "iopl"}, action: 7}}, defaultAction: 9}
	prog, err := buildFilter(arch.AARCH64, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) != 4 { // load, read, its return, the default
		t.Fatalf("program of %d instructions, want 4: %v", len(prog), prog)
	}
	if _, err := buildFilter(arch.AARCH64, sandboxPolicy()); err != nil {
		t.Fatalf("the sandbox policy does not build for arm64: %v", err)
	}
}

// A list longer than a conditional jump can skip is cut into chunks; every
// call of it must still get the list's action.
func TestBuildFilterLongList(t *testing.T) {
	var names []string
	for nr := 0; nr < 400; nr++ {
		if name, ok := arch.X86_64.SyscallNumbers[nr]; ok {
			names = append(names, name)
		}
	}
	prog, err := buildFilter(arch.X86_64, filterSpec{lists: []callList{{names: names, action: 7}}, defaultAction: 9})
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if got := runFilter(t, vm, arch.X86_64, name, 0); got != 7 {
			t.Fatalf("%s: verdict %d, want 7", name, got)
		}
	}
	if got := runFilter(t, vm, arch.X86_64, "", 500); got != 9 {
		t.Fatalf("number 500: verdict %d, want the default 9", got)
	}
}
