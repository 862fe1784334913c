package sandboxtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// The kernel's per-user quotas, held by one sandbox while another runs.
//
// The kernel counts some resources per user, whatever process or cgroup
// holds them: inotify instances (fs.inotify.max_user_instances), pending
// signals (RLIMIT_SIGPENDING; timer_create draws on it too), POSIX
// message-queue bytes (RLIMIT_MSGQUEUE) and pipe pages
// (fs.pipe-user-pages-soft). Sandboxes that share a uid share them: one
// program can take a quota whole and make another tenant's inotify_init,
// timer_create, mq_open or pipe sizing fail, and the shared count of
// pending signals (SigQ in /proc/self/status) is a channel between them.

// holderProgram takes every per-user quota it can, up to the limit, then
// reports what it holds and keeps it until it is killed.
const holderProgram = `import ctypes, errno, fcntl, json, os, resource, signal, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, b"{{TOKEN}}", 0, 0, 0)  # PR_SET_NAME: the host finds it by its comm
def err(e=None):
    e = ctypes.get_errno() if e is None else e
    return errno.errorcode.get(e, str(e))
held = {"uid": os.getuid()}
n = 0  # inotify instances
while n < 100000:
    if libc.inotify_init1(os.O_CLOEXEC) < 0:
        held["inotify_stop"] = err(); break
    n += 1
held["inotify"] = n
n = 0  # pipe pages: 1 MiB pipes, the write end closed, until sizing is refused
while n < 1000:
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
    except OSError as e:
        held["pipes_stop"] = err(e.errno); os.close(r); os.close(w); break
    os.close(w)
    n += 1
held["pipes"] = n
class MqAttr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
attr = MqAttr(0, 10, 8192, 0)
n = 0  # message queues of 80 KiB each
while n < 1000:
    if libc.mq_open(("/{{TOKEN}}-%d" % n).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr)) < 0:
        held["mq_stop"] = err(); break
    n += 1
held["mq"] = n
class SigVal(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
libc.sigqueue.argtypes = [ctypes.c_int, ctypes.c_int, SigVal]
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
limit, n, pid = resource.getrlimit(resource.RLIMIT_SIGPENDING)[0], 0, os.getpid()
while limit != resource.RLIM_INFINITY and n <= limit:  # queued real-time signals, blocked
    if libc.sigqueue(pid, int(signal.SIGRTMIN), SigVal(0)) != 0:
        held["signals_stop"] = err(); break
    n += 1
held["signals"] = n
print(json.dumps(held), flush=True)
time.sleep(120)
`

// checkerProgram uses one of each quota the holder took, reports how it
// went and its identity, and waits to be killed.
const checkerProgram = `import ctypes, errno, fcntl, json, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, b"{{TOKEN}}", 0, 0, 0)
def err(e=None):
    e = ctypes.get_errno() if e is None else e
    return errno.errorcode.get(e, str(e))
got = {"uid": os.getuid(), "gid": os.getgid()}
got["inotify"] = "ok" if libc.inotify_init1(os.O_CLOEXEC) >= 0 else err()
r, w = os.pipe()
try:
    fcntl.fcntl(w, 1031, 1 << 20)
    got["pipes"] = "ok"
except OSError as e:
    got["pipes"] = err(e.errno)
class MqAttr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
attr = MqAttr(0, 10, 8192, 0)
got["mq"] = "ok" if libc.mq_open(b"/{{TOKEN}}", os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr)) >= 0 else err()
for line in open("/proc/self/status"):  # before timer_create, whose signal counts
    if line.startswith("SigQ:"):
        got["sigq"] = int(line.split()[1].split("/")[0])
timer = ctypes.c_void_p()
got["signals"] = "ok" if libc.timer_create(1, None, ctypes.byref(timer)) == 0 else err()  # CLOCK_MONOTONIC
print(json.dumps(got), flush=True)
time.sleep(120)
`

// quotas are the per-user quotas the holder tries to exhaust, each with
// the error that says it did (the kernel's word for "this user has no
// more") and what the checker then tries.
var quotas = []struct{ name, full, what string }{
	{"inotify", "EMFILE", "inotify_init1 (fs.inotify.max_user_instances)"},
	{"pipes", "EPERM", "F_SETPIPE_SZ to 1 MiB (fs.pipe-user-pages-soft)"},
	{"mq", "EMFILE", "mq_open (RLIMIT_MSGQUEUE)"},
	{"signals", "EAGAIN", "timer_create (RLIMIT_SIGPENDING, after sigqueue)"},
}

// testPerSandboxQuotas runs a holder that exhausts the per-user quotas and,
// while it holds them, a checker in a second sandbox, which must get each
// quota, must not see the holder's pending signals, and must run as
// another uid. The host checks the two sandboxes' processes' uids too.
func testPerSandboxQuotas(t *testing.T, s *suite) {
	tokA, tokB := newToken(), newToken()
	s.remember(tokA)
	s.remember(tokB)
	beforeA, beforeB := s.snapshot(t, watch{token: tokA}), s.snapshot(t, watch{token: tokB})
	// The holder's own open-file limit must not stop it before the
	// user's inotify limit does.
	openFiles := int64(sandbox.DefaultLimits().OpenFiles)
	if n, err := readProcInt("/proc/sys/fs/inotify/max_user_instances"); err == nil {
		openFiles = max(openFiles, min(n+256, sandbox.MaxLimits().OpenFiles))
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	holder := startReporting(ctx, s.rt, withToken(sandbox.Request{Language: sandbox.Python,
		Code:   program(holderProgram, map[string]string{"TOKEN": tokA}),
		Limits: sandbox.Limits{WallTimeMS: 120_000, CPUTimeMS: 60_000, OpenFiles: openFiles}}, tokA))
	defer holder.stop()
	var held map[string]any
	if !holder.await(t, "holder", &held) {
		return
	}
	checker := startReporting(ctx, s.rt, withToken(sandbox.Request{Language: sandbox.Python,
		Code:   program(checkerProgram, map[string]string{"TOKEN": tokB}),
		Limits: sandbox.Limits{WallTimeMS: 120_000}}, tokB))
	defer checker.stop()
	var got map[string]any
	if !checker.await(t, "checker", &got) {
		return
	}
	uidA, uidB := s.hostUIDs(t, "holder", tokA), s.hostUIDs(t, "checker", tokB)
	holder.stop()
	checker.stop()
	s.checkHost(t, beforeA, watch{token: tokA})
	s.checkHost(t, beforeB, watch{token: tokB})

	t.Logf("holder (uid %v on the host) holds %v; checker (uid %v) got %v", uidA, held, uidB, got)
	if uidA >= 0 && uidA == uidB {
		t.Errorf("host: both sandboxes run as uid %d: the kernel's per-user quotas are shared between them", uidA)
	}
	if held["uid"] == got["uid"] {
		t.Errorf("inside: both sandboxes see uid %v", held["uid"])
	}
	for _, q := range quotas {
		if count, _ := held[q.name].(json.Number).Int64(); held[q.name+"_stop"] != q.full || count < 1 {
			t.Logf("%s: the holder could not exhaust it (took %v, stopped by %v): not checked", q.what, held[q.name], held[q.name+"_stop"])
			continue
		}
		if got[q.name] != "ok" {
			t.Errorf("%s failed with %v in the second sandbox while the first held %v: a per-user quota is shared", q.what, got[q.name], held[q.name])
		}
	}
	if sigq, _ := got["sigq"].(json.Number).Int64(); held["signals_stop"] == "EAGAIN" && sigq > 0 {
		t.Errorf("the second sandbox sees %v pending signals (SigQ) it never queued: the first's count leaks across", sigq)
	}
}

// readProcInt reads a /proc/sys file holding one integer.
func readProcInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// hostUIDs returns the one real uid of the processes carrying tok, seen
// from the host, or -1 (failing t) when there are none or several. With
// a range in the suite's options, the uid must lie in it.
func (s *suite) hostUIDs(t *testing.T, who, tok string) int {
	t.Helper()
	uids := map[int]bool{}
	for _, p := range findProcesses(tok) {
		if uid, ok := procRealUID(p.pid); ok {
			uids[uid] = true
		}
	}
	if len(uids) != 1 {
		t.Errorf("host: the %s's processes have uids %v, want exactly one", who, uids)
		return -1
	}
	for uid := range uids {
		switch {
		case uid == 0:
			t.Errorf("host: the %s runs as root", who)
		case s.uidCount > 0 && (uid < s.uidBase || uid >= s.uidBase+s.uidCount):
			t.Errorf("host: the %s runs as uid %d, outside the sandbox range [%d, %d)", who, uid, s.uidBase, s.uidBase+s.uidCount)
		}
		return uid
	}
	return -1
}

// procRealUID returns the real uid of process pid from its status.
func procRealUID(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid, err := strconv.Atoi(f[1])
			return uid, err == nil
		}
	}
	return 0, false
}

// reportingRun is a run in progress whose program prints one JSON line
// and then waits to be killed.
type reportingRun struct {
	cancel   context.CancelFunc
	reported chan []byte // the first line of stdout
	done     chan struct{}
	res      sandbox.Result
	err      error
}

// startReporting starts req and watches its output for the first line.
func startReporting(ctx context.Context, rt sandbox.Runtime, req sandbox.Request) *reportingRun {
	ctx, cancel := context.WithCancel(ctx)
	r := &reportingRun{cancel: cancel, reported: make(chan []byte, 1), done: make(chan struct{})}
	var line []byte
	sent := false
	req.OnOutput = func(stream sandbox.Stream, chunk []byte) { // never called concurrently
		if sent || stream != sandbox.StreamStdout {
			return
		}
		line = append(line, chunk...)
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			sent = true
			r.reported <- line[:i]
		}
	}
	go func() {
		defer close(r.done)
		r.res, r.err = rt.Run(ctx, req)
	}()
	return r
}

// await waits for the report and decodes it into v, numbers as
// json.Number; false (failing t) if the run ended without one.
func (r *reportingRun) await(t *testing.T, who string, v any) bool {
	t.Helper()
	select {
	case line := <-r.reported:
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(v); err != nil {
			t.Errorf("the %s's report %q: %v", who, line, err)
			return false
		}
		return true
	case <-r.done:
		t.Errorf("the %s ended before reporting: err %v, status %s, reason %q, stdout %q, stderr %q",
			who, r.err, r.res.Status, r.res.Reason, clip(r.res.Stdout), clip(r.res.Stderr))
		return false
	case <-time.After(runTimeout):
		t.Errorf("the %s did not report within %s", who, runTimeout)
		return false
	}
}

// stop cancels the run and waits until Run has returned.
func (r *reportingRun) stop() {
	r.cancel()
	<-r.done
}
