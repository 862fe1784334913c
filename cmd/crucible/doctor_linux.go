package main

import (
	"os"
	"strings"
)

// nativeNamespaces are the namespaces a native sandbox is made of.
var nativeNamespaces = []string{"mnt", "pid", "net", "ipc", "uts", "cgroup"}

// checkNative checks what the native runtime needs of this host: root,
// the kernel's namespaces, cgroups (v1 or v2) and seccomp filters.
func checkNative() runtimeCheck {
	c := runtimeCheck{Name: runtimeNative}
	if os.Geteuid() == 0 {
		c.Found = append(c.Found, "root")
	} else {
		c.Missing = append(c.Missing, "root: the native runtime creates cgroups and namespaces and switches programs to users of its own")
		c.Fix = append(c.Fix, "run crucible as root (sudo crucible ...), or use --runtime docker")
	}
	var absent []string
	for _, ns := range nativeNamespaces {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			absent = append(absent, ns)
		}
	}
	if len(absent) == 0 {
		c.Found = append(c.Found, "namespaces "+strings.Join(nativeNamespaces, " "))
	} else {
		c.Missing = append(c.Missing, "namespaces "+strings.Join(absent, " ")+" (not in /proc/self/ns)")
		c.Fix = append(c.Fix, "a Linux kernel built with CONFIG_NAMESPACES and each of them (5.x or later), or use --runtime docker")
	}
	switch v := cgroupVersion(); v {
	case "":
		c.Missing = append(c.Missing, "cgroups: neither v2 (/sys/fs/cgroup/cgroup.controllers) nor v1's memory controller (/sys/fs/cgroup/memory)")
		c.Fix = append(c.Fix, "as root: mount -t cgroup2 none /sys/fs/cgroup (or mount the v1 controllers), or use --runtime docker")
	default:
		c.Found = append(c.Found, "cgroups "+v)
	}
	if _, err := os.Stat("/proc/sys/kernel/seccomp/actions_avail"); err == nil {
		c.Found = append(c.Found, "seccomp")
	} else {
		c.Missing = append(c.Missing, "seccomp filters (no /proc/sys/kernel/seccomp)")
		c.Fix = append(c.Fix, "a kernel built with CONFIG_SECCOMP_FILTER, or use --runtime docker")
	}
	c.OK = len(c.Missing) == 0
	return c
}

// cgroupVersion says which cgroups this host mounts: "v2" (the unified
// hierarchy), "v1" (its memory controller), or "" for none.
func cgroupVersion() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "v2"
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		return "v1"
	}
	return ""
}
