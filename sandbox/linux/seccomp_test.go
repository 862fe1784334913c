package linux

import (
	"encoding/binary"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox/syscallpolicy"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runFilter runs the policy filter on a seccomp_data for the named call
// (or the number nr when name is "") and returns the filter's verdict.
func runFilter(t *testing.T, vm *bpf.VM, info *arch.Info, name string, nr int, args ...uint64) uint32 {
	t.Helper()
	if name != "" {
		var ok bool
		if nr, ok = info.SyscallNames[name]; !ok {
			t.Fatalf("no call %q on %s", name, info.Name)
		}
	}
	// struct seccomp_data: nr, arch, instruction_pointer, args[6]. The
	// VM loads words big-endian (network order), the kernel in the CPU's
	// order: each word is stored big-endian, in the place a little-endian
	// CPU (amd64, arm64) has it, so both see the same values.
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], uint32(info.ID))
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[20+8*i:], uint32(a>>32))
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatalf("run filter: %v", err)
	}
	return uint32(ret)
}

// TestSeccompPolicy runs the assembled allow-list on sample calls: each
// list of package syscallpolicy gets its verdict, argument rules decide on
// the arguments, and unknown numbers get ENOSYS.
func TestSeccompPolicy(t *testing.T) {
	filters, err := assembleSeccomp()
	if err != nil || len(filters) != 2 {
		t.Fatalf("want the arch filter and the allow-list, got %d filters, %v", len(filters), err)
	}
	// The kernel refuses programs over BPF_MAXINSNS (4096) instructions.
	t.Logf("allow-list filter: %d instructions", len(filters[1]))
	if len(filters[1]) > 4096 {
		t.Fatalf("allow-list filter of %d instructions, over the kernel's 4096", len(filters[1]))
	}
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := buildFilter(info, sandboxPolicy())
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("the filter does not load into a BPF VM: %v", err)
	}
	allow, eperm, enosys := uint32(retAllow), retErrno(unix.EPERM), retErrno(unix.ENOSYS)
	eafnosupport, eprotonosupport := retErrno(unix.EAFNOSUPPORT), retErrno(unix.EPROTONOSUPPORT)
	for _, tc := range []struct {
		name string
		nr   int
		args []uint64
		want uint32
	}{
		{name: "read", want: allow},
		{name: "futex", want: allow},
		{name: "execve", want: allow},
		{name: "landlock_restrict_self", want: allow},
		{name: "ptrace", want: eperm},
		{name: "io_uring_setup", want: eperm},
		{name: "open_tree_attr", want: eperm},
		{name: "modify_ldt", want: enosys},
		{name: "io_setup", want: enosys},
		{name: "clone3", want: enosys},
		{name: "", nr: 469, want: enosys},
		{name: "", nr: 1000, want: enosys},
		{name: "clone", args: []uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, want: allow},
		{name: "clone", args: []uint64{unix.CLONE_NEWUSER}, want: eperm},
		{name: "clone", args: []uint64{unix.CLONE_VM | unix.CLONE_NEWNET}, want: eperm},
		{name: "personality", args: []uint64{0xffffffff}, want: allow},
		{name: "personality", args: []uint64{0x0040000}, want: eperm}, // ADDR_NO_RANDOMIZE
		{name: "socket", args: []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, want: allow},
		{name: "socket", args: []uint64{unix.AF_INET6, unix.SOCK_DGRAM}, want: allow},
		{name: "socket", args: []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, want: allow},
		{name: "socket", args: []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, want: eprotonosupport},
		{name: "socket", args: []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, want: eafnosupport},
		{name: "socket", args: []uint64{unix.AF_VSOCK | 1<<32, unix.SOCK_STREAM}, want: eafnosupport},
		{name: "socket", args: []uint64{unix.AF_INET | 1<<32, unix.SOCK_STREAM}, want: eafnosupport},
		{name: "socket", args: []uint64{unix.AF_PACKET, unix.SOCK_RAW}, want: eafnosupport},
		{name: "socket", args: []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET}, want: eafnosupport},
		{name: "socketpair", args: []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, want: allow},
		{name: "socketpair", args: []uint64{unix.AF_INET, unix.SOCK_STREAM}, want: eafnosupport},
	} {
		got := runFilter(t, vm, info, tc.name, tc.nr, tc.args...)
		if got != tc.want {
			t.Errorf("%s%v (nr %d): verdict %#x, want %#x", tc.name, tc.args, tc.nr, got, tc.want)
		}
	}
	// Every listed call gets its list's verdict.
	for want, names := range map[uint32][]string{allow: syscallpolicy.Allowed(), eperm: syscallpolicy.Denied(), enosys: syscallpolicy.Omitted()} {
		for _, name := range names {
			if got := runFilter(t, vm, info, name, 0); got != want {
				t.Errorf("%s: verdict %#x, want %#x", name, got, want)
			}
		}
	}
}
