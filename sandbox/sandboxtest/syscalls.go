package sandboxtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/syscallpolicy"
	"github.com/elastic/go-seccomp-bpf/arch"
)

// A survey of every system call: each is made from inside the sandbox and
// its outcome checked against package syscallpolicy. Only the calls the
// policy allows may reach the kernel; the denied ones fail with EPERM and
// every other (including numbers past the table, which a newer kernel may
// already implement) with ENOSYS; none may kill the program.

// unnumbered is how many numbers past the highest known call are probed.
const unnumbered = 12

// surveyArgs are the arguments of calls that need other than all zeros to
// be harmless: seccomp(0, 0, NULL) would switch the prober to strict mode,
// so it asks for SECCOMP_GET_NOTIF_SIZES into NULL (EFAULT) instead.
var surveyArgs = map[string][]int64{
	"seccomp": {3, 0, 0},
}

// surveyProgram makes each call in a child of its own (one that exits,
// forks, blocks or crashes cannot disturb the next) with all-zero or
// surveyArgs arguments and reports its outcome: "returned", an errno name,
// "killed by SIG..." (SIGALRM: it blocked, so it reached the kernel) or
// "ended the process".
const surveyProgram = `import ctypes, errno, json, os, signal
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CALLS = json.loads('{{CALLS}}')
ARGS = json.loads('{{ARGS}}')
def probe(name, nr):
    args = ARGS.get(name, [0] * 6)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        me = os.getpid()
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        ctypes.set_errno(0)
        ret = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
        e = ctypes.get_errno()
        if os.getpid() != me:  # the new process of fork, vfork or clone
            os._exit(0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        out = errno.errorcode.get(e, "errno %d" % e) if ret == -1 else "returned"
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    got = b""
    while True:
        b = os.read(r, 100)
        if not b:
            break
        got += b
    os.close(r)
    _, st = os.waitpid(pid, 0)
    if got:
        return got.decode()
    if os.WIFSIGNALED(st):
        return "killed by " + signal.Signals(os.WTERMSIG(st)).name
    return "ended the process"
print(json.dumps({name: probe(name, nr) for name, nr in CALLS}))
`

// surveyRule is what the policy says of a call, as the survey checks it.
func surveyRule(name string) string {
	switch {
	case slices.Contains(syscallpolicy.Allowed(), name):
		return "allowed"
	case slices.Contains(syscallpolicy.ArgumentChecked(), name):
		return "checked"
	case slices.Contains(syscallpolicy.Denied(), name):
		return "EPERM"
	default:
		return "ENOSYS"
	}
}

// surveyVerdict returns what is wrong with outcome under rule, or "".
// unnamed says the runtime's filter cannot name the call
// (Options.UnnamedCalls): ENOSYS is then a refusal too.
func surveyVerdict(rule, outcome string, unnamed bool) string {
	switch {
	case outcome == "killed by SIGSYS":
		return "the filter killed the program"
	case rule == "EPERM" && unnamed && outcome == "ENOSYS":
		return ""
	case (rule == "EPERM" || rule == "ENOSYS") && outcome != rule:
		return "want " + rule
	}
	return ""
}

func testSyscallSurvey(t *testing.T, s *suite) {
	info, err := arch.GetInfo("")
	if err != nil {
		t.Skipf("no system call table for this architecture: %v", err)
	}
	var calls [][2]any
	nrs := slices.Sorted(maps.Keys(info.SyscallNumbers))
	for _, nr := range nrs {
		calls = append(calls, [2]any{info.SyscallNumbers[nr], nr})
	}
	last := nrs[len(nrs)-1]
	for nr := last + 1; nr <= last+unnumbered; nr++ {
		calls = append(calls, [2]any{fmt.Sprintf("unnumbered_%d", nr), nr})
	}
	callsJSON, _ := json.Marshal(calls)
	argsJSON, _ := json.Marshal(surveyArgs)
	tok := newToken()
	code := program(surveyProgram, map[string]string{"CALLS": string(callsJSON), "ARGS": string(argsJSON)})
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code,
		Limits: sandbox.Limits{WallTimeMS: 50_000}}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep map[string]string
	decodeReport(t, res, &rep)
	var table strings.Builder
	for _, c := range calls {
		name := c[0].(string)
		outcome, ok := rep[name]
		if !ok {
			t.Errorf("%s: not in the report", name)
			continue
		}
		rule := surveyRule(name)
		why, unnamed := s.unnamed[name]
		bad := surveyVerdict(rule, outcome, unnamed)
		if unnamed && bad == "" && outcome == "ENOSYS" {
			t.Logf("%s: ENOSYS, not EPERM: %s", name, why)
		}
		fmt.Fprintf(&table, "%4d %-26s %-8s %s", c[1], name, rule, outcome)
		if bad != "" {
			fmt.Fprintf(&table, "   <- %s", bad)
			t.Errorf("%s (%d): %s, %s", name, c[1], outcome, bad)
		}
		table.WriteByte('\n')
	}
	t.Logf("number, call, policy, outcome in the sandbox:\n%s", table.String())
}
