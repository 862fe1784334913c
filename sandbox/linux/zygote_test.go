package linux_test

import (
	"encoding/json"
	"strconv"
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

// sharedMappings makes a program list, as shared, the start of every
// writable shared mapping it has (all the zygote's, when it starts): the
// pages a run and the zygote, and so the next run, would both see.
const sharedMappings = "import ctypes\n" +
	"shared = [int(l.split('-')[0], 16) for l in open('/proc/self/maps') if l.split()[1][1] == 'w' and l.split()[1][3] == 's']\n"

// TestZygoteRunsIsolated proves that a run in a zygote slot can neither
// affect nor observe the next run in the same slot: each case's plant
// leaves something behind, in the same slot (the same run uid, no slot
// retired in between) the observer looks for it and prints what it
// finds, which must be want. The first four cases leave state in the
// sandbox, which only the slot's reset clears (each fails without it);
// the others leave it in the run's process, which the next run, a new
// fork of the zygote, must not share: its random generators (each
// reseeded for each run) and its memory (only a mapping shared with the
// zygote could carry it). What else a run's process holds (its
// environment, modules, sockets) ends with it, and a slot whose run
// leaves a process behind is retired (TestZygoteRetiresAttacked).
func TestZygoteRunsIsolated(t *testing.T) {
	rt := newZygoteRuntime(t)
	for _, tc := range []struct {
		name, plant, observe, want string
	}{
		{"files in /work, /tmp and /dev/shm",
			"for d in ('/work', '/tmp', '/dev/shm'):\n    open(d + '/planted', 'w').write('x')\n    os.mkdir(d + '/planted.d')",
			"print([d for d in ('/work', '/tmp', '/dev/shm') if set(os.listdir(d)) & {'planted', 'planted.d'}])",
			"[]"},
		// A reset that emptied the directories, not replaced their
		// file system, would leave these: the next run could not write
		// its files, or would read a matplotlib cache of the plant's.
		{"the directories' modes and the /tmp seed",
			"seeded = [os.path.join(r, f) for r, _, fs in os.walk('/tmp') for f in fs]\nassert seeded\n" +
				"for f in seeded:\n    open(f, 'ab').write(b'planted')\n" +
				"for d in ('/work', '/tmp', '/dev/shm'):\n    os.chmod(d, 0o500)",
			"print([d for d in ('/work', '/tmp', '/dev/shm') if os.stat(d).st_mode & 0o777 == 0o500], " +
				"[f for r, _, fs in os.walk('/tmp') for f in fs if open(os.path.join(r, f), 'rb').read().endswith(b'planted')])",
			"[] []"},
		{"System V shared memory, message queue, semaphores",
			"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n" +
				"assert libc.shmget(4242, 4096, 0o1666) >= 0 and libc.msgget(4242, 0o1666) >= 0 and libc.semget(4242, 1, 0o1666) >= 0, ctypes.get_errno()",
			"print([k for k in ('shm', 'msg', 'sem') if len(open('/proc/sysvipc/' + k).read().splitlines()) > 1])",
			"[]"},
		{"POSIX message queue",
			"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nassert libc.mq_open(b'/planted', 0o100 | 2, 0o666, None) >= 0, ctypes.get_errno()",
			"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.mq_open(b'/planted', 0), ctypes.get_errno())",
			"-1 2"}, // ENOENT
		{"memory shared with the zygote", sharedMappings + "for a in shared:\n    ctypes.memmove(a, b'planted', 7)\nprint(len(shared))",
			sharedMappings + "print([hex(a) for a in shared if ctypes.string_at(a, 7) == b'planted'])",
			"[]"},
		// The stdlib's generator reseeds itself at a fork, numpy's does
		// not: each is checked alone, so that either reseed's loss fails.
		{"stdlib random", "import random\nprint(random.random())", "import random\nprint(random.random())",
			""}, // checked below: the two lines differ
		{"numpy random", "import numpy\nprint(numpy.random.rand())", "import numpy\nprint(numpy.random.rand())",
			""},
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
					t.Errorf("two runs of one slot drew the same random number: %s", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("the observer found %q, want %q", got, tc.want)
			}
		})
	}
}

// reachZygote is a program that tries to reach its zygote (its parent,
// or process $ZYGOTE_PID when it runs on the host) every way a process
// of another user might, and prints a JSON object: for each attempt, the
// error it got ("ok" if none).
const reachZygote = `import ctypes, json, os, signal
libc = ctypes.CDLL(None, use_errno=True)
z = int(os.environ.get("ZYGOTE_PID", "0")) or os.getppid()
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
local, remote = iovec(ctypes.cast(buf, ctypes.c_void_p), 8), iovec(id(os), 8)
got = {}
def attempt(name, f):
    try:
        r = f()
        if isinstance(r, int) and r < 0:
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
attempt("process_vm_readv", lambda: libc.process_vm_readv(z, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
print(json.dumps(got, sort_keys=True))
`

// TestZygoteUnreachable proves that a run cannot signal, trace or read
// its zygote: every attempt fails with a permission error (or, in /proc,
// which shows a run only its own processes, finds nothing), and a run
// that broadcasts SIGKILL leaves the zygote serving the next run. Then,
// since hidepid stops the /proc attempts before the layer behind it, it
// proves that layer from the host (probeZygoteFromHost): the zygote's
// real and saved ids are not the run's, it is not dumpable, and the same
// attempts made on the host with the run's ids, past any hidepid, all
// meet a permission error.
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
	z := probeZygoteFromHost(t, rt)
	run := strconv.Itoa(z.runUID)
	if len(z.uid) != 4 || z.uid[0] == run || z.uid[2] == run || z.gid[0] == strconv.Itoa(z.runGID) || z.gid[2] == strconv.Itoa(z.runGID) {
		t.Errorf("the zygote's uids %v and gids %v: want real and saved ids other than the run's (%d, %d)", z.uid, z.gid, z.runUID, z.runGID)
	}
	if z.memOwner != 0 {
		t.Errorf("the zygote is dumpable: its /proc/%d/mem belongs to uid %d, not root", z.pid, z.memOwner)
	}
	for attempt, err := range z.reach {
		if err != "Operation not permitted" && err != "Permission denied" {
			t.Errorf("from the host with the run's ids, %s: %s, want a permission error", attempt, err)
		}
	}
	t.Logf("from the host: zygote uids %v, gids %v; %v", z.uid, z.gid, z.reach)
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
		reason       string // the retirement's, in WarmStats().RetiredBy
	}{
		{"renice the zygote", "os.setpriority(os.PRIO_PROCESS, os.getppid(), 5)", sandbox.Limits{}, "zygote_changed"},
		{"renice the zygote's process group", "os.setpriority(os.PRIO_PGRP, os.getpgid(os.getppid()), 5)", sandbox.Limits{}, "zygote_changed"},
		{"pin the zygote to a CPU", "os.sched_setaffinity(os.getppid(), {0})", sandbox.Limits{}, "zygote_changed"},
		{"schedule the zygote as idle", "os.sched_setscheduler(os.getppid(), os.SCHED_IDLE, os.sched_param(0))", sandbox.Limits{}, "zygote_changed"},
		{"leave a process running", "if os.fork() == 0:\n    os.setsid()\n    os.execv('/bin/sleep', ['sleep', '100'])", sandbox.Limits{}, "process_left"},
		{"out of memory", "b = bytearray(200 << 20)", sandbox.Limits{MemoryBytes: 64 << 20}, "oom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid := strings.TrimSpace(string(slotRun(t, rt, uidLine).Stdout))
			if again := strings.TrimSpace(string(slotRun(t, rt, uidLine).Stdout)); again != uid {
				t.Fatalf("a harmless run retired the slot: uid %s, then %s", uid, again)
			}
			retired, byReason := rt.WarmStats().Retired, rt.WarmStats().RetiredBy[tc.reason]
			awaitWarm(t, rt)
			res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: uidLine + tc.attack, Limits: tc.lim})
			if first, _, _ := strings.Cut(string(res.Stdout), "\n"); first != uid {
				t.Fatalf("the attack did not run in the slot: %s", describe(res))
			}
			next := strings.TrimSpace(string(slotRun(t, rt, uidLine).Stdout))
			if next == uid || rt.WarmStats().Retired != retired+1 {
				t.Errorf("the slot was not retired: uid %s then %s, %+v (the attack: %s)", uid, next, rt.WarmStats(), describe(res))
			}
			if got := rt.WarmStats().RetiredBy[tc.reason]; got != byReason+1 {
				t.Errorf("the retirement was not counted as %s: %+v", tc.reason, rt.WarmStats())
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
