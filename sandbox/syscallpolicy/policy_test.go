package syscallpolicy

import (
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// The lists must name real calls, each once, in one list only: a call in
// two lists would get whichever verdict the filter tests first.
func TestListsAreDisjointAndKnown(t *testing.T) {
	lists := map[string][]string{
		"Allowed":         Allowed(),
		"ArgumentChecked": ArgumentChecked(),
		"Denied":          Denied(),
		"Omitted":         Omitted(),
	}
	seen := map[string]string{}
	for list, names := range lists {
		for _, name := range names {
			if prev, ok := seen[name]; ok {
				t.Errorf("%s is in both %s and %s", name, prev, list)
			}
			seen[name] = list
			if _, ok := arch.X86_64.SyscallNames[name]; !ok {
				t.Errorf("%s: %s is no system call on x86-64", list, name)
			}
		}
	}
	for list, names := range lists {
		for i, name := range names {
			if slices.Contains(names[:i], name) {
				t.Errorf("%s lists %s twice", list, name)
			}
		}
	}
	for _, must := range []string{"clone3", "io_uring_setup", "ptrace", "unshare", "bpf", "userfaultfd"} {
		if slices.Contains(Allowed(), must) {
			t.Errorf("%s is allowed", must)
		}
	}
}
