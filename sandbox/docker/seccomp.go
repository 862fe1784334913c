package docker

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/crucible-sandbox/crucible/sandbox/syscallpolicy"
)

// seccompProfile is Docker's JSON seccomp profile format (the one `docker
// run --security-opt seccomp=FILE` reads), the part of it used here.
type seccompProfile struct {
	DefaultAction string        `json:"defaultAction"`
	Architectures []string      `json:"architectures"`
	Syscalls      []seccompRule `json:"syscalls"`
}

// seccompRule is one rule of a profile: the calls it names, with every
// argument condition met, get Action.
type seccompRule struct {
	Names    []string     `json:"names"`
	Action   string       `json:"action"`
	ErrnoRet *uint        `json:"errnoRet,omitempty"`
	Args     []seccompArg `json:"args,omitempty"`
}

// seccompArg compares one argument of a call.
type seccompArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// afMax is the number of address families the kernel knows (AF_MAX).
const afMax = 46

// seccompJSON returns the profile every container runs under, built from
// package syscallpolicy, the policy the native runtime compiles into its
// own filter, so that both refuse the same calls:
//
//   - the allowed calls are allowed; every other call fails with ENOSYS,
//     as in the native filter: each call of the architecture's table that
//     no other rule names is listed with errnoRet ENOSYS, because Docker
//     20.10 ignores the profile's defaultErrnoRet (its default action
//     answers EPERM); clone3 is among them. A call the daemon's libseccomp
//     cannot name is skipped by runc, which refuses every number past the
//     highest it knows with ENOSYS: such a call (open_tree_attr with
//     libseccomp 2.5) is refused before the kernel, with ENOSYS where the
//     native filter says EPERM if the policy denies it;
//   - the denied calls fail with EPERM;
//   - clone is allowed only without a namespace flag, and fails with EPERM
//     with any of them;
//   - socket is allowed in the families SocketRules allow (netlink with
//     NETLINK_ROUTE alone) and fails with EAFNOSUPPORT in every other
//     family the kernel knows (EPROTONOSUPPORT for another netlink
//     protocol); socketpair likewise;
//   - personality is allowed with the values PersonalityValues lists;
//     any other value gets the default action, EPERM, as in the native
//     filter (the profile sets no defaultErrnoRet, so every Docker
//     version answers the same).
//
// Only the native architecture is listed: a call made through another
// ABI (32-bit int 0x80 on x86-64) is refused by the runtime's bad-arch
// action.
func seccompJSON() (string, error) {
	// Linux's numbers whatever GOOS builds the profile: the daemon runs Linux.
	eperm, eafnosupport, eprotonosupport, enosys := uint(syscallpolicy.EPERM), uint(syscallpolicy.EAFNOSUPPORT), uint(syscallpolicy.EPROTONOSUPPORT), uint(syscallpolicy.ENOSYS)
	unlisted, err := unlistedCalls()
	if err != nil {
		return "", err
	}
	p := seccompProfile{
		DefaultAction: "SCMP_ACT_ERRNO",
		Architectures: []string{nativeArch},
		Syscalls: []seccompRule{
			{Names: syscallpolicy.Allowed(), Action: "SCMP_ACT_ALLOW"},
			{Names: syscallpolicy.Denied(), Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm},
			// clone3 among them, as in the native filter: its flags live
			// in memory a filter cannot read, and ENOSYS (not a runtime's
			// default EPERM) makes C libraries fall back to clone.
			{Names: unlisted, Action: "SCMP_ACT_ERRNO", ErrnoRet: &enosys},
			{Names: []string{"clone"}, Action: "SCMP_ACT_ALLOW", Args: []seccompArg{
				{Index: 0, Value: syscallpolicy.NamespaceCloneFlags, ValueTwo: 0, Op: "SCMP_CMP_MASKED_EQ"}}},
		},
	}
	for bit := uint64(1); bit != 0; bit <<= 1 {
		if syscallpolicy.NamespaceCloneFlags&bit != 0 {
			p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"clone"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm,
				Args: []seccompArg{{Index: 0, Value: bit, ValueTwo: bit, Op: "SCMP_CMP_MASKED_EQ"}}})
		}
	}
	for _, v := range syscallpolicy.PersonalityValues() {
		p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"personality"}, Action: "SCMP_ACT_ALLOW",
			Args: []seccompArg{{Index: 0, Value: v, Op: "SCMP_CMP_EQ"}}})
	}
	allowed := map[int]syscallpolicy.SocketRule{}
	for _, r := range syscallpolicy.SocketRules() {
		allowed[r.Family] = r
	}
	pairs := map[int]bool{}
	for _, f := range syscallpolicy.SocketpairFamilies() {
		pairs[f] = true
	}
	for family := 0; family < afMax; family++ {
		famArg := seccompArg{Index: 0, Value: uint64(family), Op: "SCMP_CMP_EQ"}
		r, ok := allowed[family]
		switch {
		case !ok:
			p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"socket"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eafnosupport, Args: []seccompArg{famArg}})
		case r.Protocols == nil:
			p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"socket"}, Action: "SCMP_ACT_ALLOW", Args: []seccompArg{famArg}})
		default:
			for _, proto := range r.Protocols {
				p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"socket"}, Action: "SCMP_ACT_ALLOW",
					Args: []seccompArg{famArg, {Index: 2, Value: uint64(proto), Op: "SCMP_CMP_EQ"}}})
				p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"socket"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eprotonosupport,
					Args: []seccompArg{famArg, {Index: 2, Value: uint64(proto), Op: "SCMP_CMP_NE"}}})
			}
		}
		if pairs[family] {
			p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"socketpair"}, Action: "SCMP_ACT_ALLOW", Args: []seccompArg{famArg}})
		} else {
			p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"socketpair"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eafnosupport, Args: []seccompArg{famArg}})
		}
	}
	// A family the kernel does not know, or one with any of the high 32
	// bits set (which the kernel would ignore, and which the rules above,
	// comparing all 64, do not match), fails as an unknown family.
	for _, name := range []string{"socket", "socketpair"} {
		p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{name}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eafnosupport,
			Args: []seccompArg{{Index: 0, Value: afMax, Op: "SCMP_CMP_GE"}}})
	}
	b, err := json.Marshal(p)
	return string(b), err
}

// unlistedCalls are the calls of the native architecture's table that the
// policy neither allows, denies nor checks by argument: the ones that fail
// with ENOSYS.
func unlistedCalls() ([]string, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, l := range [][]string{syscallpolicy.Allowed(), syscallpolicy.Denied(), syscallpolicy.ArgumentChecked()} {
		for _, n := range l {
			listed[n] = true
		}
	}
	var out []string
	for _, n := range slices.Sorted(maps.Values(info.SyscallNumbers)) {
		if !listed[n] {
			out = append(out, n)
		}
	}
	return slices.Compact(out), nil
}
