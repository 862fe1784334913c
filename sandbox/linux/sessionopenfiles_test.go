package linux_test

import (
	"fmt"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// TestSessionFewOpenFiles proves a session starts, cold or warm, with any
// open-files limit a request may ask, down to the smallest, and that its
// cells get that limit: the kernel keeps its channel out of the user's
// fds below the limit, not at a fixed fd number past it.
func TestSessionFewOpenFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts linux.Options
	}{
		{"cold", linux.Options{}},
		{"warm", linux.Options{WarmSessions: 1}},
	} {
		rt := newRuntime(t, tc.opts)
		for _, n := range []int64{16, 64, 100, 101, 256} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, n), func(t *testing.T) {
				if tc.opts.WarmSessions > 0 {
					awaitWarmSessions(t, rt)
				}
				s := newSession(t, rt, sandbox.Limits{OpenFiles: n})
				res := execCode(t, s, "import resource\nf = open('x.txt', 'w')\nf.close()\nresource.getrlimit(resource.RLIMIT_NOFILE)")
				if want := fmt.Sprintf("(%d, %d)", n, n); res.Status != sandbox.StatusOK || res.Value != want {
					t.Errorf("got %s, want value %s", describe(res), want)
				}
			})
		}
	}
}
