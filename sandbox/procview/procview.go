// Package procview makes up the /proc files a sandbox sees in place of the
// host's, the same for every runtime (the native sandbox's init and the
// docker runtime's bound files): they tell what the sandbox may use, not
// what the host has or how busy it is. It builds on every system: the
// docker runtime writes them for a daemon's Linux wherever the client runs.
package procview

import (
	"fmt"
	"strconv"
	"strings"
)

// Meminfo is the sandbox's /proc/meminfo: the memory limit as the
// machine's memory, all of it free, no swap. Programs that size caches or
// worker pools from it (node's os.totalmem, free, JVMs) see what they may
// use, not the host's; the figures are fixed at start, not live.
func Meminfo(memoryBytes int64) string {
	kb := memoryBytes >> 10
	var b strings.Builder
	for _, f := range []struct {
		name string
		kb   int64
	}{
		{"MemTotal", kb}, {"MemFree", kb}, {"MemAvailable", kb}, {"Buffers", 0}, {"Cached", 0},
		{"SwapCached", 0}, {"Shmem", 0}, {"SwapTotal", 0}, {"SwapFree", 0},
	} {
		fmt.Fprintf(&b, "%-16s%8d kB\n", f.name+":", f.kb)
	}
	return b.String()
}

// Stat is the sandbox's /proc/stat: one line per processor the sandbox may
// run on (glibc counts them for sysconf(_SC_NPROCESSORS_ONLN) when /sys is
// absent; node's os.cpus lists them), every counter zero, and the host's
// boot time btime, which /proc/uptime reveals anyway and ps needs. The
// host's CPU times, interrupts and fork counts stay hidden.
func Stat(cpus int, btime string) string {
	const zeros = " 0 0 0 0 0 0 0 0 0 0\n"
	var s strings.Builder
	s.WriteString("cpu " + zeros)
	for i := range cpus {
		s.WriteString("cpu" + strconv.Itoa(i) + zeros)
	}
	s.WriteString("intr 0\nctxt 0\nbtime " + btime + "\nprocesses 0\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n")
	return s.String()
}
