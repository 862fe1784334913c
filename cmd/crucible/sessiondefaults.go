package main

import (
	"fmt"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// describeSessionDefaults says, for the commands' help, what a session
// gets for the limits its request leaves out: sandbox.DefaultSessionLimits,
// the one set every transport applies. Each line is indented by two
// spaces.
func describeSessionDefaults() string {
	d := sandbox.DefaultSessionLimits()
	return fmt.Sprintf("\n  %d s of wall and CPU time and %s of output per cell;\n"+
		"  %s of memory, a %s working directory (its files count as memory),\n"+
		"  %d processes and %d open files for the session",
		d.WallTimeMS/1000, helpSize(d.OutputBytes), helpSize(d.MemoryBytes), helpSize(d.DiskBytes), d.Processes, d.OpenFiles)
}

// helpSize writes a size in the largest binary unit that divides it:
// "2 GiB", "1 MiB", "1536 KiB".
func helpSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{sandbox.GiB, "GiB"}, {sandbox.MiB, "MiB"}, {sandbox.KiB, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
