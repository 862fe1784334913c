package linux_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestZygoteHeapInHugePages proves that a slot's zygote keeps the heap
// its preload built in huge pages (python_kernel.py's collapse_heap): a
// fork copies one page-table entry per huge page instead of 512. The
// data-science image's preload makes tens of megabytes of heap; at least
// 8 MiB of it must be in huge pages, as the host reads the zygote's
// smaps_rollup. The host must allow them (transparent_hugepage not
// "never").
func TestZygoteHeapInHugePages(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Fatalf("the host allows no transparent huge pages (%q, %v): the zygote cannot keep its heap in them", b, err)
	}
	rt := newZygoteRuntime(t)
	slotRun(t, rt, "print(1)")
	pid := zygoteOf(t, os.Getpid())
	rollup, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	kib := -1
	for _, l := range strings.Split(string(rollup), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "AnonHugePages:" {
			kib, _ = strconv.Atoi(f[1])
		}
	}
	if kib < 8<<10 {
		t.Errorf("the zygote keeps %d KiB of its heap in huge pages, want at least 8 MiB:\n%s", kib, rollup)
	}
}

// zygoteOf returns the host pid of the one zygote among the grandchildren
// of process parent (its sandboxes' inits' children named python3).
func zygoteOf(t *testing.T, parent int) int {
	t.Helper()
	ppid := func(pid string) (string, string) {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return "", ""
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < 0 {
			return "", ""
		}
		f := strings.Fields(s[end+1:])
		return s[open+1 : end], f[1]
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []int
	for _, e := range ents {
		comm, p := ppid(e.Name())
		if comm != "python3" || p == "" {
			continue
		}
		if _, gp := ppid(p); gp == strconv.Itoa(parent) {
			pid, _ := strconv.Atoi(e.Name())
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		t.Fatalf("found %d zygotes (%v) among the grandchildren of %d, want 1", len(found), found, parent)
	}
	return found[0]
}
