package sandboxinit

import (
	"crypto/rand"
	"fmt"
	"os"
	"path"
	"runtime"
	"strings"
	"syscall"

	"github.com/crucible-sandbox/crucible/sandbox/procview"
)

// The sandbox's /proc shows its own PID namespace, but many of its files
// describe the whole machine: the host's boot arguments and boot id, its
// memory, load, pressure, interrupts and disks, how many cgroups exist (so
// how many sandboxes run), whose kernel keys it holds. This file hides
// them, as runc hides its masked paths: files become empty, directories
// empty, and the few files ordinary programs read to size themselves
// (meminfo, stat, loadavg, boot_id) are replaced with the sandbox's own
// view. /proc/sys becomes read-only.
//
// Every mask is a bind mount of a file or directory of init's staging
// tmpfs, owned by root and read-only by mode: the program, never root,
// cannot write through them, and the bind outlives the staging mount
// point when the host's root is detached.

// procEmptied are the /proc files that read as empty in the sandbox: host
// boot arguments (cmdline), the host's cgroups and keys, kernel internals
// runc masks, and host-wide counters of memory, interrupts and disks.
var procEmptied = []string{
	"cmdline", "cgroups", "keys", "key-users", "kcore", "timer_list", "timer_stats",
	"sched_debug", "latency_stats", "interrupts", "softirqs", "vmstat", "zoneinfo",
	"buddyinfo", "pagetypeinfo", "slabinfo", "vmallocinfo", "diskstats", "partitions", "swaps",
}

// procEmptiedDirs are the /proc directories that list nothing: host
// hardware (acpi, asound, scsi, bus, irq), filesystems (fs) and pressure
// (PSI) figures.
var procEmptiedDirs = []string{"acpi", "asound", "scsi", "bus", "fs", "irq", "pressure"}

// Files of the sandbox's own view, bound over their /proc namesakes.
const (
	viewMeminfo = "meminfo"
	viewStat    = "stat"
	viewLoadavg = "loadavg"
	viewBootID  = "sys/kernel/random/boot_id"
)

// syntheticLoadavg is the sandbox's /proc/loadavg: no load, one runnable
// task of one (programs such as os.getloadavg need the file to parse).
const syntheticLoadavg = "0.00 0.00 0.00 1/1 1\n"

// maskKernelView hides the host's figures in the /proc mounted at proc,
// using dir (on the staging tmpfs) for the files bound over them.
func maskKernelView(proc, dir string) error {
	bootID, err := randomUUID()
	if err != nil {
		return err
	}
	stat, err := syntheticStat(path.Join(proc, "stat"), runtime.NumCPU())
	if err != nil {
		return err
	}
	files := map[string]string{
		"empty": "", viewMeminfo: SyntheticMeminfo(0), viewStat: stat,
		viewLoadavg: syntheticLoadavg, "boot_id": bootID + "\n",
	}
	empty := path.Join(dir, "empty.d")
	for _, d := range []string{dir, empty} {
		if err := os.Mkdir(d, 0o555); err != nil {
			return err
		}
	}
	for name, content := range files {
		if err := os.WriteFile(path.Join(dir, name), []byte(content), 0o444); err != nil {
			return err
		}
	}
	// Read-only first, so that the binds below land on top of it.
	sys := path.Join(proc, "sys")
	if err := syscall.Mount(sys, sys, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind /proc/sys: %w", err)
	}
	if err := syscall.Mount("", sys, "", syscall.MS_BIND|syscall.MS_REMOUNT|roFlags|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("remount /proc/sys read-only: %w", err)
	}
	binds := [][2]string{
		{viewMeminfo, viewMeminfo}, {viewStat, viewStat}, {viewLoadavg, viewLoadavg}, {"boot_id", viewBootID},
	}
	for _, f := range procEmptied {
		binds = append(binds, [2]string{"empty", f})
	}
	for _, d := range procEmptiedDirs {
		binds = append(binds, [2]string{"empty.d", d})
	}
	for _, b := range binds {
		target := path.Join(proc, b[1])
		// Files this kernel lacks (sched_debug, timer_stats, asound...)
		// have nothing to hide.
		if _, err := os.Lstat(target); os.IsNotExist(err) {
			continue
		}
		if err := syscall.Mount(path.Join(dir, b[0]), target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("mask /proc/%s: %w", b[1], err)
		}
	}
	return nil
}

// setMeminfo writes the sandbox's /proc/meminfo for its memory limit; it
// runs as root, after the root was switched and before the program.
func setMeminfo(memoryBytes int64) error {
	if err := os.WriteFile("/proc/"+viewMeminfo, []byte(SyntheticMeminfo(memoryBytes)), 0); err != nil {
		return fmt.Errorf("write /proc/meminfo: %w", err)
	}
	return nil
}

// SyntheticMeminfo is the sandbox's /proc/meminfo (procview.Meminfo).
var SyntheticMeminfo = procview.Meminfo

// syntheticStat is the sandbox's /proc/stat (procview.Stat) with the
// boot time the host's, hostStat, says.
func syntheticStat(hostStat string, cpus int) (string, error) {
	b, err := os.ReadFile(hostStat)
	if err != nil {
		return "", err
	}
	btime := "0"
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			btime = v
		}
	}
	return procview.Stat(cpus, btime), nil
}

// randomUUID returns a random (version 4) UUID: the sandbox's boot id,
// unrelated to the host's.
func randomUUID() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", err
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}
