package docker

import (
	"encoding/json"
	"fmt"

	"github.com/crucible-sandbox/crucible/sandbox/syscallpolicy"
)

// gvisorSeccomp turns the seccomp profile of seccompJSON into the one a
// gvisor run gets, for runsc's own reading of a profile.
//
// runsc (with --oci-seccomp, scripts/dockerd.sh) installs the container's
// profile inside its sandbox, as a filter of the sentry, before the
// program's first instruction, exec'd processes included. But it reads a
// profile its own way (runsc/specutils/seccomp in gVisor's source):
//
//   - every SCMP_ACT_ERRNO fails the call with EPERM, whatever errnoRet
//     says. The calls the policy refuses with ENOSYS would fail with EPERM,
//     and that breaks more than an errno: a C library falls back from
//     clone3 to clone only on ENOSYS, so pthread_create, and every
//     interpreter that starts a thread (Node), would fail. So each of those
//     rules becomes SCMP_ACT_TRACE: with no tracer attached the kernel
//     (here the sentry, as Linux) skips the call and returns ENOSYS. No
//     tracer can be attached: the policy refuses ptrace itself (EPERM), so
//     no process of the sandbox can trace another, and nothing outside
//     traces the sentry's tasks.
//   - a rule naming a call the sentry's own table lacks is dropped, and
//     numbers past the table's end have no rule at all: both get the
//     default action. Under runc the default is EPERM and libseccomp
//     refuses numbers it cannot name with ENOSYS; here the default
//     becomes SCMP_ACT_TRACE (ENOSYS), the policy's answer for a call it
//     does not list. A denied call the sentry cannot name is then refused
//     with ENOSYS, not EPERM: still before the sentry runs anything.
//   - the default answered personality's values the policy does not list
//     (EPERM): an explicit rule for every other value, after the rules of
//     the allowed ones (runsc tries rules in order), keeps that.
//
// The other refusals (socket families and netlink protocols) keep
// SCMP_ACT_ERRNO and fail with EPERM where the native filter says
// EAFNOSUPPORT or EPROTONOSUPPORT: refused either way.
func gvisorSeccomp(profile string) (string, error) {
	var p seccompProfile
	if err := json.Unmarshal([]byte(profile), &p); err != nil {
		return "", fmt.Errorf("gvisor seccomp profile: %w", err)
	}
	enosys := uint(syscallpolicy.ENOSYS)
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		return "", fmt.Errorf("gvisor seccomp profile: default action %q, want SCMP_ACT_ERRNO", p.DefaultAction)
	}
	p.DefaultAction = "SCMP_ACT_TRACE"
	for i, r := range p.Syscalls {
		if r.Action == "SCMP_ACT_ERRNO" && r.ErrnoRet != nil && *r.ErrnoRet == enosys {
			p.Syscalls[i].Action, p.Syscalls[i].ErrnoRet = "SCMP_ACT_TRACE", nil
		}
	}
	p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"personality"}, Action: "SCMP_ACT_ERRNO"})
	b, err := json.Marshal(p)
	return string(b), err
}
