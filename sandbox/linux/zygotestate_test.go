package linux_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// The tests in this file check that a run in a zygote slot leaves nothing
// the next run of the slot can read through its descriptors or the
// slot's network namespace. They use the host's root filesystem: a
// zygote's preload does not matter here.

// fdFlagsReport prints the status flags and, for a pipe, the size of
// each descriptor the program has (from /proc/self/fd), one per line.
const fdFlagsReport = `import fcntl, os
for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
    try:
        fl = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:
        continue  # the descriptor that listed /proc/self/fd
    try:
        size = fcntl.fcntl(fd, 1032)  # F_GETPIPE_SZ
    except OSError:
        size = 0
    print(fd, oct(fl), size)
`

// fdFlagsPlant sets O_NONBLOCK and O_APPEND on the program's stdin,
// stdout and stderr and, on each pipe, a size other than the default.
// (Only those: a descriptor shared with the host by mistake is what the
// report then finds, and its flags are not the test's to change.)
const fdFlagsPlant = `import fcntl, os
for fd in (0, 1, 2):
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK | os.O_APPEND)
        fcntl.fcntl(fd, 1031, 1 << 16 if fcntl.fcntl(fd, 1032) != 1 << 16 else 1 << 17)  # F_SETPIPE_SZ
    except OSError:
        pass
`

// netTables prints every entry of the network namespace's socket tables,
// prefixed with the table's name, and loopback's line of /proc/net/dev.
const netTables = `for name in ("tcp", "tcp6", "udp", "udp6", "unix"):
    for line in open("/proc/net/" + name).read().splitlines()[1:]:
        print(name, line.strip())
for line in open("/proc/net/dev").read().splitlines()[2:]:
    print("dev", " ".join(line.split()))
`

// loopbackTraffic opens a TCP connection over loopback and closes it
// client side first, which leaves the client's end in TIME_WAIT for a
// minute, sends a UDP datagram to itself and binds an abstract unix
// socket; then it prints the tables, which must show its connection.
const loopbackTraffic = `import socket
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen()
cli = socket.create_connection(srv.getsockname())
conn, _ = srv.accept()
cli.sendall(b"covert")
conn.recv(6)
cli.close()
conn.close()
srv.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
u.sendto(b"covert", u.getsockname())
x = socket.socket(socket.AF_UNIX)
x.bind("\0covert")
`

// TestZygoteRunFDFlagsNotShared proves that descriptor flags a run sets
// (O_NONBLOCK, O_APPEND, a pipe's size) on its stdio do not reach the
// next run of the slot: its descriptors are as a run's before any run set
// anything, and, while the process running the runtime holds descriptors
// without close-on-exec, they are its stdio alone.
func TestZygoteRunFDFlagsNotShared(t *testing.T) {
	holdHostFDs(t)
	rt := newRuntime(t, linux.Options{Warm: 1})
	before := slotRun(t, rt, uidLine+fdFlagsReport)
	planted := slotRun(t, rt, uidLine+fdFlagsPlant)
	after := slotRun(t, rt, uidLine+fdFlagsReport)
	for _, res := range []sandbox.Result{before, planted, after} {
		if res.Status != sandbox.StatusOK {
			t.Fatalf("a run failed: %s", describe(res))
		}
	}
	uid, want, _ := strings.Cut(string(before.Stdout), "\n")
	if u, _, _ := strings.Cut(string(planted.Stdout), "\n"); u != uid || !strings.HasPrefix(string(after.Stdout), uid+"\n") {
		t.Fatalf("the runs were not served by one slot: %q, %q, %q", before.Stdout, planted.Stdout, after.Stdout)
	}
	if got := strings.TrimPrefix(string(after.Stdout), uid+"\n"); got != want {
		t.Errorf("after a run set flags on its descriptors the next run's are\n%s\nwant, as before it,\n%s", got, want)
	}
	if fds := strings.Split(strings.TrimSpace(want), "\n"); len(fds) != 3 {
		t.Errorf("a run has descriptors %q, want its stdio alone", fds)
	}
}

// slotHost is what the host shows of a zygote slot: its run user, its
// processes (init, the zygote, the fork waiting for the next run: those
// in its mount namespace), each with its start time, and its cgroup
// directories.
type slotHost struct {
	uid     int
	procs   map[int]string // pid: start time
	cgroups []string
}

// findSlot finds, from the host, rt's slot whose run user is uid, once it
// is ready for its next run.
func findSlot(t *testing.T, rt *linux.Runtime, uid int) slotHost {
	t.Helper()
	s := slotHost{uid: uid, procs: map[int]string{}}
	awaitWarm(t, rt) // the fork for the next run is made
	pids := pidsOf(uid)
	if len(pids) != 1 {
		t.Fatalf("processes of the slot's run user %d on the host: %v, want its next run's", uid, pids)
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pids[0]))
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if other, _ := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); err != nil || other != ns {
			continue
		}
		s.procs[pid] = startTime(pid)
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
			// hierarchy:controllers:/crucible/<pid>.<n>[/run], v1 or v2
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 || !strings.HasPrefix(f[2], "/crucible/") {
				continue
			}
			slot := "/" + strings.Join(strings.Split(f[2], "/")[1:3], "/")
			dir := filepath.Join("/sys/fs/cgroup", strings.Split(strings.TrimPrefix(f[1], "name="), ",")[0], slot)
			if !slices.Contains(s.cgroups, dir) {
				s.cgroups = append(s.cgroups, dir)
			}
		}
	}
	if len(s.procs) < 3 || len(s.cgroups) == 0 {
		t.Fatalf("the slot of uid %d shows on the host as %+v, want init, the zygote and a fork, and cgroups", uid, s)
	}
	return s
}

// startTime returns field 22 of /proc/<pid>/stat, "" once pid is gone:
// with the pid, it names a process even if the pid is reused.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(string(b), ')')
	if err != nil || i < 0 {
		return ""
	}
	if f := strings.Fields(string(b)[i+1:]); len(f) > 19 {
		return f[19]
	}
	return ""
}

// pidsOf lists the host's processes whose real uid is uid.
func pidsOf(uid int) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && procUID(pid) == uid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// gone waits until nothing of s is left on the host: no process of its
// run user, none of its processes (and so its mount namespace, which
// held its mounts, is gone), none of its cgroups; it returns what is
// left after a minute.
func (s slotHost) gone() []string {
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		if pids := pidsOf(s.uid); len(pids) > 0 {
			left = append(left, fmt.Sprintf("processes of uid %d: %v", s.uid, pids))
		}
		for pid, start := range s.procs {
			if startTime(pid) == start {
				left = append(left, fmt.Sprintf("process %d", pid))
			}
		}
		for _, dir := range s.cgroups {
			if _, err := os.Stat(dir); err == nil {
				left = append(left, "cgroup "+dir)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestZygoteRunNetworkNotShared proves that the next run of a zygote slot
// learns nothing of a run's loopback traffic: the run's TCP connection in
// TIME_WAIT, its datagram in loopback's counters, its unix socket. A run
// that used the network retires its slot (a harmless run first shows
// that one that does not keeps it), the next run, in a new slot, sees
// tables as empty and counters as fresh as the first run of the first
// slot did, and nothing of the retired slot is left on the host.
func TestZygoteRunNetworkNotShared(t *testing.T) {
	rt := newRuntime(t, linux.Options{Warm: 1})
	fresh := slotRun(t, rt, uidLine+netTables)
	uid, want, _ := strings.Cut(string(fresh.Stdout), "\n")
	if again := slotRun(t, rt, uidLine); strings.TrimSpace(string(again.Stdout)) != uid {
		t.Fatalf("a harmless run retired the slot: uid %s, then %s", uid, again.Stdout)
	}
	if strings.Contains(want, "tcp") || strings.Contains(want, "udp") || strings.Contains(want, "unix") {
		t.Fatalf("a slot's first run found sockets:\n%s", want)
	}
	n, _ := strconv.Atoi(uid)
	slot := findSlot(t, rt, n)
	retired := rt.WarmStats().Retired

	traffic := slotRun(t, rt, uidLine+loopbackTraffic+netTables)
	if traffic.Status != sandbox.StatusOK || !strings.HasPrefix(string(traffic.Stdout), uid+"\n") {
		t.Fatalf("the traffic did not run in the slot: %s", describe(traffic))
	}
	if seen := string(traffic.Stdout); !strings.Contains(seen, "tcp ") || !strings.Contains(seen, "@covert") {
		t.Fatalf("the run that made traffic does not see it in the tables (the check would be vacuous):\n%s", seen)
	}
	next := slotRun(t, rt, uidLine+netTables)
	nextUID, got, _ := strings.Cut(string(next.Stdout), "\n")
	if got != want {
		t.Errorf("after a run's loopback traffic the next run sees\n%s\nwant, as the first run of a slot,\n%s", got, want)
	}
	if nextUID == uid || rt.WarmStats().Retired != retired+1 {
		t.Errorf("the slot was not retired: uid %s then %s, %+v", uid, nextUID, rt.WarmStats())
	}
	if left := slot.gone(); len(left) > 0 {
		t.Errorf("the retired slot left on the host: %v", left)
	}
}
