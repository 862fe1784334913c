package linux_test

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// TestZygoteCollectsProgramCycles proves that what a zygote's fork does
// while it waits for its run (python_kernel.py's warm_up: a rehearsal of
// the run's first steps, then gc.freeze, so that the collection at the
// run's end scans the program's objects alone) leaves the program's own
// objects to the collector: reference cycles the program made are
// collected, by its gc.collect() and at its end, with their finalizers,
// as a script's are by a cold interpreter.
func TestZygoteCollectsProgramCycles(t *testing.T) {
	const cycle = "class C:\n    def __del__(self):\n        print('finalized', flush=True)\n\nc = C()\nc.me = c\n"
	cases := []struct {
		name, code, want string
	}{
		{"cycle finalized at exit", cycle, "finalized\n"},
		{"cycle finalized by gc.collect()", cycle + "del c\nimport gc\nprint(gc.collect() > 0)\n", "finalized\nTrue\n"},
		{"weakref.finalize at exit", "import weakref\nclass C:\n    pass\n\nc = C()\nc.me = c\nweakref.finalize(c, print, 'callback')\n", "callback\n"},
	}
	cold := newRuntime(t, linux.Options{})
	rt := newZygoteRuntime(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := sandbox.Request{Language: sandbox.Python, Code: tc.code}
			for name, res := range map[string]sandbox.Result{"cold": runProgram(t, cold, req), "zygote": slotRun(t, rt, tc.code)} {
				if res.Status != sandbox.StatusOK || string(res.Stdout) != tc.want {
					t.Errorf("%s run: got %s, %q, want %q (%s)", name, res.Status, res.Stdout, tc.want, describe(res))
				}
			}
		})
	}
}
