package linux_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The tests in this file check zygote slots (linux.Options.Warm, the default): runs
// forked from one interpreter in one sandbox, one after another. They run
// in the data-science image, whose zygote has numpy, pandas and matplotlib
// loaded (and numpy's threads running), as a server's would.

// newZygoteRuntime returns a runtime with one zygote slot in the
// data-science image.
func newZygoteRuntime(t *testing.T) *linux.Runtime {
	opts := imageOptions(testenv.Image(t, "datascience"))
	opts.Warm = 1
	return newRuntime(t, opts)
}

// slotRun runs code in rt's zygote slot, once the slot is ready, and
// returns its result; it fails t unless the slot served it.
func slotRun(t *testing.T, rt *linux.Runtime, code string) sandbox.Result {
	t.Helper()
	awaitWarm(t, rt)
	before := rt.WarmStats().Hits
	res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: code})
	if rt.WarmStats().Hits != before+1 {
		t.Fatalf("the run was not served by the zygote slot: %+v", rt.WarmStats())
	}
	return res
}

// uidLine makes a program print its uid first: runs of one slot share it,
// runs of two slots never do.
const uidLine = "import os\nprint(os.getuid())\n"

// TestZygoteRunsIsolated proves that a run in a zygote slot can neither
// affect nor observe the next run in the same slot: each case's plant
// leaves something behind, in the same slot (the same run uid, no slot
// retired in between) the observer looks for it and prints what it
// finds, which must be want.
func TestZygoteRunsIsolated(t *testing.T) {
	rt := newZygoteRuntime(t)
	for _, tc := range []struct {
		name, plant, observe, want string
	}{
		{"files in /work, /tmp and /dev/shm",
			"for d in ('/work', '/tmp', '/dev/shm'):\n    open(d + '/planted', 'w').write('x')\n    os.mkdir(d + '/planted.d')",
			"print([d for d in ('/work', '/tmp', '/dev/shm') if set(os.listdir(d)) & {'planted', 'planted.d'}])",
			"[]"},
		{"System V shared memory, message queue, semaphores",
			"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n" +
				"assert libc.shmget(4242, 4096, 0o1666) >= 0 and libc.msgget(4242, 0o1666) >= 0 and libc.semget(4242, 1, 0o1666) >= 0, ctypes.get_errno()",
			"print([k for k in ('shm', 'msg', 'sem') if len(open('/proc/sysvipc/' + k).read().splitlines()) > 1])",
			"[]"},
		{"POSIX message queue",
			"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nassert libc.mq_open(b'/planted', 0o100 | 2, 0o666, None) >= 0, ctypes.get_errno()",
			"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.mq_open(b'/planted', 0), ctypes.get_errno())",
			"-1 2"}, // ENOENT
		{"abstract unix socket",
			"import socket\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0planted')\ns.listen()",
			"print('@planted' in open('/proc/net/unix').read())",
			"False"},
		{"environment and interpreter state",
			"os.environ['PLANTED'] = '1'\nimport sys, json\nsys.modules['json'].planted = 1\nimport builtins\nbuiltins.planted = 1",
			"import sys, json, builtins\nprint('PLANTED' in os.environ, hasattr(json, 'planted'), hasattr(builtins, 'planted'))",
			"False False False"},
		{"random numbers",
			"import random, numpy\nprint(random.random(), numpy.random.rand())",
			"import random, numpy\nprint(random.random(), numpy.random.rand())",
			""}, // checked below: the two lines differ
	} {
		t.Run(tc.name, func(t *testing.T) {
			retired := rt.WarmStats().Retired
			plant := slotRun(t, rt, uidLine+tc.plant)
			obs := slotRun(t, rt, uidLine+tc.observe)
			if plant.Status != sandbox.StatusOK || obs.Status != sandbox.StatusOK {
				t.Fatalf("plant: %s\nobserver: %s", describe(plant), describe(obs))
			}
			p, o := strings.SplitN(string(plant.Stdout), "\n", 2), strings.SplitN(string(obs.Stdout), "\n", 2)
			if p[0] != o[0] || rt.WarmStats().Retired != retired {
				t.Fatalf("the runs were not served by one slot: uids %s and %s, %+v", p[0], o[0], rt.WarmStats())
			}
			got := strings.TrimSpace(o[1])
			if tc.want == "" {
				if got == strings.TrimSpace(p[1]) {
					t.Errorf("two runs of one slot drew the same random numbers: %s", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("the observer found %q, want %q", got, tc.want)
			}
		})
	}
}

// reachZygote is a program that tries to reach its zygote (its parent)
// every way a process of another user might, and prints a JSON object:
// for each attempt, the error it got ("ok" if none).
const reachZygote = `import ctypes, json, os, signal
libc = ctypes.CDLL(None, use_errno=True)
z = os.getppid()
got = {}
def attempt(name, f):
    try:
        r = f()
        if r is not None and r < 0:
            got[name] = os.strerror(ctypes.get_errno())
        else:
            got[name] = "ok"
    except OSError as e:
        got[name] = e.strerror
for sig in ("SIGKILL", "SIGTERM", "SIGSTOP", "SIGINT", "SIGUSR1"):
    attempt("kill " + sig, lambda: os.kill(z, getattr(signal, sig)))
attempt("kill the process group", lambda: os.killpg(os.getpgid(z), signal.SIGKILL))
for f in ("mem", "environ", "maps", "fd"):
    attempt("/proc/zygote/" + f, lambda: os.listdir("/proc/%d/fd" % z) if f == "fd" else open("/proc/%d/%s" % (z, f), "rb").read(1))
attempt("ptrace attach", lambda: libc.ptrace(16, z, None, None))
attempt("prlimit", lambda: libc.prlimit(z, 7, None, None))
attempt("pidfd_getfd", lambda: libc.syscall(438, os.pidfd_open(z), 0, 0))
print(json.dumps(got, sort_keys=True))
`

// TestZygoteUnreachable proves that a run cannot signal, trace or read
// its zygote: every attempt fails with a permission error (or, in /proc,
// which shows a run only its own processes, finds nothing), and a run
// that broadcasts SIGKILL leaves the zygote serving the next run.
func TestZygoteUnreachable(t *testing.T) {
	rt := newZygoteRuntime(t)
	res := slotRun(t, rt, uidLine+reachZygote)
	lines := strings.SplitN(string(res.Stdout), "\n", 2)
	var got map[string]string
	if res.Status != sandbox.StatusOK || len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &got) != nil {
		t.Fatalf("want a report, got %s", describe(res))
	}
	for attempt, err := range got {
		hidden := strings.HasPrefix(attempt, "/proc/") && err == "No such file or directory"
		if err != "Operation not permitted" && err != "Permission denied" && !hidden {
			t.Errorf("%s: %s, want a permission error", attempt, err)
		}
	}
	t.Logf("%s", lines[1])
	slotRun(t, rt, "import os, signal\nos.kill(-1, signal.SIGKILL)")
	next := slotRun(t, rt, uidLine)
	if uid := strings.TrimSpace(string(next.Stdout)); uid != lines[0] || rt.WarmStats().Retired != 0 {
		t.Errorf("after a broadcast SIGKILL the next run had uid %s (the slot's is %s): %+v", uid, lines[0], rt.WarmStats())
	}
}

// TestZygoteRetiresAttacked proves that a run that changes its zygote, or
// leaves something the reset does not clear, gets its slot retired: the
// next run is served by a new slot (another uid). Each case first checks
// that a harmless run keeps the slot.
func TestZygoteRetiresAttacked(t *testing.T) {
	rt := newZygoteRuntime(t)
	for _, tc := range []struct {
		name, attack string
		lim          sandbox.Limits
	}{
		{"renice the zygote", "os.setpriority(os.PRIO_PROCESS, os.getppid(), 5)", sandbox.Limits{}},
		{"renice the zygote's process group", "os.setpriority(os.PRIO_PGRP, os.getpgid(os.getppid()), 5)", sandbox.Limits{}},
		{"pin the zygote to a CPU", "os.sched_setaffinity(os.getppid(), {0})", sandbox.Limits{}},
		{"schedule the zygote as idle", "os.sched_setscheduler(os.getppid(), os.SCHED_IDLE, os.sched_param(0))", sandbox.Limits{}},
		{"leave a process running", "if os.fork() == 0:\n    os.setsid()\n    os.execv('/bin/sleep', ['sleep', '100'])", sandbox.Limits{}},
		{"out of memory", "b = bytearray(200 << 20)", sandbox.Limits{MemoryBytes: 64 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid := strings.TrimSpace(string(slotRun(t, rt, uidLine).Stdout))
			if again := strings.TrimSpace(string(slotRun(t, rt, uidLine).Stdout)); again != uid {
				t.Fatalf("a harmless run retired the slot: uid %s, then %s", uid, again)
			}
			retired := rt.WarmStats().Retired
			awaitWarm(t, rt)
			res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: uidLine + tc.attack, Limits: tc.lim})
			if first, _, _ := strings.Cut(string(res.Stdout), "\n"); first != uid {
				t.Fatalf("the attack did not run in the slot: %s", describe(res))
			}
			next := strings.TrimSpace(string(slotRun(t, rt, uidLine).Stdout))
			if next == uid || rt.WarmStats().Retired != retired+1 {
				t.Errorf("the slot was not retired: uid %s then %s, %+v (the attack: %s)", uid, next, rt.WarmStats(), describe(res))
			}
		})
	}
}

// TestZygoteCgroupView proves that a run in a zygote slot learns nothing
// of the host's cgroups from /proc/self/cgroup: every line names the
// slot's cgroup namespace root or its "run" child, never a path above it.
func TestZygoteCgroupView(t *testing.T) {
	rt := newZygoteRuntime(t)
	res := slotRun(t, rt, "print(open('/proc/self/cgroup').read(), end='')")
	if res.Status != sandbox.StatusOK || len(res.Stdout) == 0 {
		t.Fatalf("want /proc/self/cgroup, got %s", describe(res))
	}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		if _, path, _ := strings.Cut(line[strings.Index(line, ":")+1:], ":"); path != "/" && path != "/run" {
			t.Errorf("a run sees cgroup %q (line %q), want / or /run", path, line)
		}
	}
}
