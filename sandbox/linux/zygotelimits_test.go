package linux_test

import (
	"fmt"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestZygoteLimitsPerRun proves that each run of a zygote slot has its
// own limits, whatever the run before it had, now that a run with the
// same limits as the one before writes none of them again (its cgroup
// keeps a default run's limits between runs, and the sandbox's
// /proc/meminfo what the last run's showed): one slot serves the runs in
// order, each printing the memory /proc/meminfo shows and how many
// threads it could start under its process limit.
func TestZygoteLimitsPerRun(t *testing.T) {
	rt := newZygoteRuntime(t)
	const code = "import threading\n" +
		"total = next(l.split()[1] for l in open('/proc/meminfo') if l.startswith('MemTotal:'))\n" +
		"started = 0\n" +
		"ev = threading.Event()\n" +
		"try:\n" +
		"    for _ in range(8):\n" +
		"        threading.Thread(target=ev.wait).start()\n" +
		"        started += 1\n" +
		"except RuntimeError:\n" +
		"    pass\n" +
		"ev.set()\n" +
		"print(total, started)\n"
	kib := func(b int64) int64 { return b / 1024 }
	def := sandbox.DefaultLimits().WithDefaults()
	for i, tc := range []struct {
		name string
		lim  sandbox.Limits
		want string
	}{
		{"defaults", sandbox.Limits{}, fmt.Sprintf("%d 8", kib(def.MemoryBytes))},
		{"defaults again", sandbox.Limits{}, fmt.Sprintf("%d 8", kib(def.MemoryBytes))},
		{"less memory, 4 processes", sandbox.Limits{MemoryBytes: 128 * sandbox.MiB, Processes: 4}, fmt.Sprintf("%d 3", kib(128*sandbox.MiB))},
		{"the same again", sandbox.Limits{MemoryBytes: 128 * sandbox.MiB, Processes: 4}, fmt.Sprintf("%d 3", kib(128*sandbox.MiB))},
		{"defaults after lower limits", sandbox.Limits{}, fmt.Sprintf("%d 8", kib(def.MemoryBytes))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			awaitWarm(t, rt)
			before := rt.WarmStats().Hits
			res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: code, Limits: tc.lim})
			if rt.WarmStats().Hits != before+1 {
				t.Fatalf("run %d was not served by the zygote slot: %+v", i, rt.WarmStats())
			}
			if res.Status != sandbox.StatusOK || string(res.Stdout) != tc.want+"\n" {
				t.Errorf("got %s, %q, want %q (%s)", res.Status, res.Stdout, tc.want+"\n", describe(res))
			}
		})
	}
}
