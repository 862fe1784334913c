package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestSessionDefaultsInHelp proves `crucible session` and `crucible
// serve` state the one set of session defaults (sandbox.DefaultSessionLimits)
// in their help, and that the session command's flags default to it: the
// CLI's sessions and the server's get the same limits.
func TestSessionDefaultsInHelp(t *testing.T) {
	d := sandbox.DefaultSessionLimits()
	want := []string{
		strconv.FormatInt(d.WallTimeMS/1000, 10) + " s of wall and CPU time",
		helpSize(d.MemoryBytes) + " of memory",
		"a " + helpSize(d.DiskBytes) + " working directory",
	}
	for _, name := range []string{"session", "serve"} {
		cmd, _, err := newRootCommand().Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(cmd.Long, w) {
				t.Errorf("crucible %s --help does not say %q:\n%s", name, w, cmd.Long)
			}
		}
		if strings.Contains(cmd.Long, "SESSION_DEFAULTS") {
			t.Errorf("crucible %s --help keeps the placeholder", name)
		}
	}
	cmd, _, err := newRootCommand().Find([]string{"session"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flag string
		want string
	}{
		{"timeout", d.WallTime().String()},
		{"memory", sizeFlag{&d.MemoryBytes}.String()},
		{"disk", sizeFlag{&d.DiskBytes}.String()},
	} {
		if got := cmd.Flags().Lookup(c.flag).DefValue; got != c.want {
			t.Errorf("crucible session --%s defaults to %s, want the sessions' default %s", c.flag, got, c.want)
		}
	}
}

// TestHelpSize pins the sizes the help writes.
func TestHelpSize(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{2 * sandbox.GiB, "2 GiB"}, {sandbox.MiB, "1 MiB"}, {1536 * sandbox.KiB, "1536 KiB"}, {100, "100 bytes"}} {
		if got := helpSize(c.n); got != c.want {
			t.Errorf("helpSize(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
