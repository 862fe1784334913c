package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/cgroups/v3"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// A v1 run cgroup limits its socket buffers from the start (the kernel
// charges only sockets made while the limit is set) and follows every
// change of the memory limit, as a pool's sandbox gets its run's limits.
func TestCgroupV1SocketMemory(t *testing.T) {
	testenv.Root(t)
	tcpFile := filepath.Join(cgroupRoot, "memory", "memory.kmem.tcp.limit_in_bytes")
	if cgroups.Mode() == cgroups.Unified {
		t.Skip("cgroup v2 charges socket memory to memory.current")
	}
	if _, err := os.Stat(tcpFile); err != nil {
		t.Skipf("this kernel has no %s", tcpFile)
	}
	name := fmt.Sprintf("/%s/%d.sockettest", cgroupParent, os.Getpid())
	cg, err := newCgroupV1(name, cgroupLimits{MemoryBytes: 128 << 20, Pids: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.remove()
	for _, tc := range []struct {
		memory, wantTCP int64
	}{
		{128 << 20, 32 << 20}, // as created
		{512 << 20, 128 << 20},
		{64 << 20, 16 << 20},
	} {
		if err := cg.setLimits(cgroupLimits{MemoryBytes: tc.memory, Pids: 16}); err != nil {
			t.Fatalf("setLimits(%d MiB): %v", tc.memory>>20, err)
		}
		got, err := readInt(cg.file("memory", "memory.kmem.tcp.limit_in_bytes"))
		if err != nil || got != tc.wantTCP {
			t.Errorf("memory limit %d MiB: socket limit %d, %v; want %d", tc.memory>>20, got, err, tc.wantTCP)
		}
	}
}
