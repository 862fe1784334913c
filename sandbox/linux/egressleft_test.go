package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/policy/egress/egresstest"
)

// netnsHolders returns what on the host still holds network namespace
// id ("net:[inode]", as /proc/PID/ns/net reads): every process or thread
// in it, and every descriptor of this test process that names it (a
// namespace file the proxy kept open). A socket opened in it (the
// proxy's listener) holds it too; openFDs counts those.
func netnsHolders(t *testing.T, id string) []string {
	t.Helper()
	var held []string
	tasks, err := filepath.Glob("/proc/[0-9]*/task/[0-9]*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tasks {
		if l, err := os.Readlink(p); err == nil && l == id {
			held = append(held, p)
		}
	}
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fds {
		if l, err := os.Readlink(p); err == nil && l == id {
			held = append(held, p)
		}
	}
	return held
}

// hostLinks lists the interfaces of the host's network namespace, but
// the test hosts' (egresstest.LinkPrefix), which the egress tests of any
// package running beside this one add and remove at any moment.
func hostLinks(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) > 1 && !strings.HasPrefix(f[1], egresstest.LinkPrefix) {
			names = append(names, f[1])
		}
	}
	return strings.Join(names, " ")
}
