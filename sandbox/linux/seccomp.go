package linux

import (
	"fmt"
	"syscall"

	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
	"github.com/crucible-sandbox/crucible/sandbox/syscallpolicy"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Seccomp verdicts.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

// retErrno is the verdict that fails a call with e.
func retErrno(e syscall.Errno) uint32 {
	return unix.SECCOMP_RET_ERRNO | uint32(e)
}

// sandboxPolicy is package syscallpolicy as a seccomp program. Security:
// it is an allow-list. A call nothing matches fails with ENOSYS, so a call
// the kernel adds later is refused until it is reviewed, and C libraries
// fall back to older calls as on an older kernel.
//
// The calls with argument rules come first: each of their blocks returns
// on every path. clone with a namespace flag and personality with another
// value get EPERM; socket and socketpair outside their families get
// EAFNOSUPPORT (EPROTONOSUPPORT for a netlink protocol). Then the allowed
// calls, the denied calls (EPERM), and clone3, whose flags live in memory
// a filter cannot read, explicitly ENOSYS so that C libraries fall back to
// clone, which the filter can check; these are searched as a binary tree
// (see buildFilter).
func sandboxPolicy() filterSpec {
	eperm, eafnosupport := retErrno(unix.EPERM), retErrno(unix.EAFNOSUPPORT)
	clone := callRules{name: "clone", rules: []argRule{
		{checks: []argCheck{{arg: 0, value: syscallpolicy.NamespaceCloneFlags}}, action: retAllow},
		{action: eperm},
	}}
	personality := callRules{name: "personality"}
	for _, v := range syscallpolicy.PersonalityValues() {
		personality.rules = append(personality.rules, argRule{checks: []argCheck{argEqual(0, v)}, action: retAllow})
	}
	personality.rules = append(personality.rules, argRule{action: eperm})
	socket := callRules{name: "socket"}
	for _, r := range syscallpolicy.SocketRules() {
		family := argEqual(0, uint64(r.Family))
		if r.Protocols == nil {
			socket.rules = append(socket.rules, argRule{checks: []argCheck{family}, action: retAllow})
			continue
		}
		for _, p := range r.Protocols {
			socket.rules = append(socket.rules, argRule{checks: []argCheck{family, argEqual(2, uint64(p))}, action: retAllow})
		}
		socket.rules = append(socket.rules, argRule{checks: []argCheck{family}, action: retErrno(unix.EPROTONOSUPPORT)})
	}
	socket.rules = append(socket.rules, argRule{action: eafnosupport})
	socketpair := callRules{name: "socketpair"}
	for _, f := range syscallpolicy.SocketpairFamilies() {
		socketpair.rules = append(socketpair.rules, argRule{checks: []argCheck{argEqual(0, uint64(f))}, action: retAllow})
	}
	socketpair.rules = append(socketpair.rules, argRule{action: eafnosupport})

	return filterSpec{
		argRules: []callRules{clone, socket, socketpair, personality},
		lists: []callList{
			{names: syscallpolicy.Allowed(), action: retAllow},
			{names: syscallpolicy.Denied(), action: eperm},
			{names: []string{"clone3"}, action: retErrno(unix.ENOSYS)},
		},
		defaultAction: retErrno(unix.ENOSYS),
	}
}

// argEqual is the check that argument n is v. The comparison is on the
// whole 64-bit register: a value with high bits set (which the kernel
// would drop from an int) matches no rule and is refused.
func argEqual(n int, v uint64) argCheck {
	return argCheck{arg: n, equal: true, value: v}
}

// assembleSeccomp builds the sandbox's two filters: the architecture check
// first, then the allow-list policy. The host assembles them once per
// Runtime; each sandbox's init only loads them.
func assembleSeccomp() ([]sandboxinit.SeccompFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	// A 64-bit x86 process can still enter the kernel through the 32-bit
	// `int 0x80` gate, where every call has another number: a policy keyed
	// on the native numbers would not see them. This filter, stacked in
	// front of the policy, kills any foreign-ABI call (the strictest
	// verdict of the stacked filters wins). x32 calls have the native
	// architecture but numbers with bit 30 set, which no list holds.
	archCheck := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.RetConstant{Val: retAllow},
	}
	allowList, err := buildFilter(info, sandboxPolicy())
	if err != nil {
		return nil, err
	}
	var filters []sandboxinit.SeccompFilter
	for _, insts := range [][]bpf.Instruction{archCheck, allowList} {
		raw, err := bpf.Assemble(insts)
		if err != nil {
			return nil, fmt.Errorf("seccomp assemble: %w", err)
		}
		f := make(sandboxinit.SeccompFilter, len(raw))
		for i, ins := range raw {
			f[i] = syscall.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
		}
		filters = append(filters, f)
	}
	return filters, nil
}
