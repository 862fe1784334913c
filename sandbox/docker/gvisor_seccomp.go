package docker

import (
	"encoding/json"
	"fmt"

	"golang.org/x/sys/unix"
)

// gvisorSeccomp turns the seccomp profile of seccompJSON into the one a
// gvisor run gets, for runsc's own reading of a profile.
//
// runsc (with --oci-seccomp, scripts/dockerd.sh) installs the container's
// profile inside its sandbox, as a filter of the sentry, before the
// program's first instruction, exec'd processes included. But it reads a
// profile its own way (runsc/specutils/seccomp): every SCMP_ACT_ERRNO
// fails the call with EPERM, whatever errnoRet or defaultErrnoRet say. The
// calls the policy refuses with ENOSYS would then fail with EPERM, and
// that breaks more than an errno: a C library falls back from clone3 to
// clone only on ENOSYS, so pthread_create and every interpreter that
// starts a thread (Node) would fail.
//
// So every refusal with ENOSYS, the default action included, becomes
// SCMP_ACT_TRACE: with no tracer attached the kernel (here the sentry, as
// Linux) skips the call and returns ENOSYS. No tracer can be attached: the
// policy refuses ptrace itself (EPERM), so no process of the sandbox can
// trace another, and nothing outside traces the sentry's tasks. The other
// refusals keep SCMP_ACT_ERRNO; runsc makes them EPERM, which the suite's
// socket family checks see as EPERM where the native filter says
// EAFNOSUPPORT or EPROTONOSUPPORT: refused either way (gvisorErrnoNote).
func gvisorSeccomp(profile string) (string, error) {
	var p seccompProfile
	if err := json.Unmarshal([]byte(profile), &p); err != nil {
		return "", fmt.Errorf("gvisor seccomp profile: %w", err)
	}
	enosys := uint(unix.ENOSYS)
	if p.DefaultAction == "SCMP_ACT_ERRNO" && p.DefaultErrnoRet != nil && *p.DefaultErrnoRet == enosys {
		p.DefaultAction, p.DefaultErrnoRet = "SCMP_ACT_TRACE", nil
	}
	for i, r := range p.Syscalls {
		if r.Action == "SCMP_ACT_ERRNO" && r.ErrnoRet != nil && *r.ErrnoRet == enosys {
			p.Syscalls[i].Action, p.Syscalls[i].ErrnoRet = "SCMP_ACT_TRACE", nil
		}
	}
	b, err := json.Marshal(p)
	return string(b), err
}
