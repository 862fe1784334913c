package linux_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// TestProcessRlimitPerSandbox checks RLIMIT_NPROC in every kind of
// sandbox. It counts the processes of a user across the host: inherited
// from the host (root's, tens of thousands) and with every sandbox the same
// user, it was one more quota all tenants shared. With a uid per sandbox
// it is the sandbox's own cap: the run's process limit (the cgroup's pids
// limit is the same), or for a warm interpreter, which cannot raise it
// for the run it gets, the largest limit a run may ask for.
func TestProcessRlimitPerSandbox(t *testing.T) {
	const code = "import resource\nprint(*resource.getrlimit(resource.RLIMIT_NPROC))"
	want := func(n int64) string { return fmt.Sprintf("%d %d", n, n) }
	for _, tc := range []struct {
		name string
		get  func(t *testing.T) string
		want string
	}{
		{"cold run", func(t *testing.T) string {
			rt := newRuntime(t, linux.Options{})
			return string(runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: code,
				Limits: sandbox.Limits{Processes: 10}}).Stdout)
		}, want(10)},
		{"session", func(t *testing.T) string {
			s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{Processes: 12})
			return string(execCode(t, s, code).Stdout)
		}, want(12)},
		{"warm run", func(t *testing.T) string {
			rt := newRuntime(t, linux.Options{Warm: 1})
			awaitWarm(t, rt)
			out := string(runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: code}).Stdout)
			if rt.WarmStats().Hits != 1 {
				t.Fatalf("the run was not served warm: %+v", rt.WarmStats())
			}
			return out
		}, want(sandbox.MaxLimits().Processes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.TrimSpace(tc.get(t)); got != tc.want {
				t.Errorf("RLIMIT_NPROC (soft hard) = %q, want %q", got, tc.want)
			}
		})
	}
}
