package sandboxtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/elastic/go-seccomp-bpf/arch"
)

// Hostile programs that try to get out: write the host's files, read its
// secrets, reach its network, gain privileges, touch its processes, or
// leave processes running after the run.

func testWriteOutside(t *testing.T, s *suite) {
	tok := newToken()
	mustFail := []string{
		"/" + tok, "/usr/" + tok, "/usr/bin/" + tok, "/etc/" + tok, "/etc/passwd",
		"/code/main.py", "/code/" + tok, "/dev/" + tok, "/proc/sys/kernel/hostname",
		"/proc/1/root/" + tok, "/sys/fs/cgroup/" + tok,
		// init's executable: the host's binary or its sealed copy (the
		// attack of CVE-2019-5736 on runc).
		"/proc/1/exe",
	}
	// /tmp and /dev/shm are the sandbox's own (they share the working
	// tmpfs): writing there works, and must not reach the host's.
	private := []string{"/tmp/" + tok, "/dev/shm/" + tok, "/work/" + tok}
	code := program(`import errno, json
TOKEN = "{{TOKEN}}"
def attempt(path, mode):
    try:
        with open(path, mode) as f:
            f.write(TOKEN)
    except OSError as e:
        return {"path": path, "ok": False, "err": errno.errorcode.get(e.errno, str(e.errno))}
    try:
        with open(path) as f:
            back = TOKEN in f.read()
    except OSError:
        back = False
    return {"path": path, "ok": True, "readback": back}
out = [attempt(p, "a" if p in ("/etc/passwd", "/code/main.py", "/proc/sys/kernel/hostname") else "w")
       for p in {{PATHS}}]
print(json.dumps(out))
`, map[string]string{"TOKEN": tok, "PATHS": pyList(append(slices.Clone(mustFail), private...))})
	hostPaths := []string{"/" + tok, "/usr/" + tok, "/usr/bin/" + tok, "/etc/" + tok, "/code/" + tok,
		"/dev/" + tok, "/tmp/" + tok, "/dev/shm/" + tok, "/work/" + tok}
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code},
		watch{token: tok, paths: hostPaths, contentFiles: []string{"/etc/passwd", "/etc/hostname"}})
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep []struct {
		Path     string `json:"path"`
		OK       bool   `json:"ok"`
		Err      string `json:"err"`
		Readback bool   `json:"readback"`
	}
	decodeReport(t, res, &rep)
	if len(rep) != len(mustFail)+len(private) {
		t.Fatalf("report has %d attempts, want %d", len(rep), len(mustFail)+len(private))
	}
	for _, a := range rep {
		if slices.Contains(private, a.Path) {
			if !a.OK || !a.Readback {
				t.Errorf("writing %s inside the sandbox: ok=%v (%s) readback=%v, want it to work", a.Path, a.OK, a.Err, a.Readback)
			}
		} else if a.OK {
			t.Errorf("writing %s succeeded, want it refused", a.Path)
		} else {
			t.Logf("%s: %s", a.Path, a.Err)
		}
	}
}

// pyList renders strings as a Python list literal.
func pyList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func testReadSecrets(t *testing.T, s *suite) {
	tok := newToken()
	name := "SANDBOXTEST_SECRET_" + strings.ToUpper(randomHex(4))
	secret := "s3cr3t-" + randomHex(16)
	t.Setenv(name, secret) // in the host process that calls Run
	half := len(secret) / 2
	code := program(`import errno, json, os
NAME = "{{NAME}}"
SECRET = "{{A}}" + "{{B}}"  # split, so the value is not even in this file
def probe_file(path):
    try:
        open(path, "rb").read()
        return "readable"
    except FileNotFoundError:
        return "absent"
    except PermissionError:
        return "denied"
def probe_dir(path):
    try:
        return "listable: %d entries" % len(os.listdir(path))
    except FileNotFoundError:
        return "absent"
    except PermissionError:
        return "denied"
out = {
    "shadow": probe_file("/etc/shadow"),
    "gshadow": probe_file("/etc/gshadow"),
    "root": probe_dir("/root"),
    "name_in_environ": NAME in os.environ,
    "value_in_environ": any(SECRET in v for v in os.environ.values()),
}
found, readable = [], 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for f in ("environ", "cmdline"):
        try:
            data = open("/proc/%s/%s" % (pid, f), "rb").read()
        except OSError:
            continue
        readable += 1
        if SECRET.encode() in data or NAME.encode() in data:
            found.append("%s/%s" % (pid, f))
out["found"], out["readable"] = found, readable
print(json.dumps(out))
`, map[string]string{"NAME": name, "A": secret[:half], "B": secret[half:]})
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep struct {
		Shadow         string   `json:"shadow"`
		Gshadow        string   `json:"gshadow"`
		Root           string   `json:"root"`
		NameInEnviron  bool     `json:"name_in_environ"`
		ValueInEnviron bool     `json:"value_in_environ"`
		Found          []string `json:"found"`
		Readable       int      `json:"readable"`
	}
	decodeReport(t, res, &rep)
	for what, got := range map[string]string{"/etc/shadow": rep.Shadow, "/etc/gshadow": rep.Gshadow, "/root": rep.Root} {
		if got != "absent" && got != "denied" {
			t.Errorf("%s is %s in the sandbox, want absent or denied", what, got)
		}
	}
	if rep.NameInEnviron || rep.ValueInEnviron {
		t.Errorf("the host's environment leaked into os.environ (name %v, value %v)", rep.NameInEnviron, rep.ValueInEnviron)
	}
	if len(rep.Found) > 0 {
		t.Errorf("the host's secret is readable in the sandbox at /proc/%v", rep.Found)
	}
	if rep.Readable == 0 {
		t.Errorf("the program could read no /proc/*/environ, not even its own: the search proves nothing")
	}
	if bytes.Contains(res.Stdout, []byte(secret)) || bytes.Contains(res.Stderr, []byte(secret)) {
		t.Errorf("the secret appears in the program's output")
	}
}

func testNetwork(t *testing.T, s *suite) {
	tok := newToken()
	// Two host services the sandbox must not reach: TCP on the host's
	// loopback, and an abstract Unix socket (those are scoped by network
	// namespace, not by the filesystem).
	var accepted atomic.Int64
	listen := func(network, addr string) net.Listener {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Fatalf("listen %s %s: %v", network, addr, err)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		return l
	}
	tcp := listen("tcp", "127.0.0.1:0")
	defer tcp.Close()
	unix := listen("unix", "@sandboxtest-"+tok)
	defer unix.Close()
	port := tcp.Addr().(*net.TCPAddr).Port

	// No external host is ever reached: the sandbox has no route, so the
	// connects fail at once. The 1s timeout bounds a broken runtime.
	code := program(`import errno, json, socket, time
def attempt(family, kind, addr, send=False):
    s = socket.socket(family, kind)
    s.settimeout(1)
    t0 = time.monotonic()
    try:
        if send:
            s.sendto(b"x", addr)
            r = "sent"
        else:
            s.connect(addr)
            r = "connected"
    except socket.timeout:
        r = "timeout"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()
    return {"result": r, "ms": (time.monotonic() - t0) * 1000}
out = {
    "host_tcp": attempt(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {{PORT}})),
    "host_unix": attempt(socket.AF_UNIX, socket.SOCK_STREAM, "\0sandboxtest-{{TOKEN}}"),
    "cloudflare": attempt(socket.AF_INET, socket.SOCK_STREAM, ("1.1.1.1", 53)),
    "google": attempt(socket.AF_INET, socket.SOCK_STREAM, ("8.8.8.8", 53)),
    "google_udp": attempt(socket.AF_INET, socket.SOCK_DGRAM, ("8.8.8.8", 53), send=True),
    "cloudflare_v6": attempt(socket.AF_INET6, socket.SOCK_STREAM, ("2606:4700:4700::1111", 53)),
    "interfaces": sorted(name for _, name in socket.if_nameindex()),
}
print(json.dumps(out))
`, map[string]string{"TOKEN": tok, "PORT": strconv.Itoa(port)})
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	type attempt struct {
		Result string  `json:"result"`
		MS     float64 `json:"ms"`
	}
	var rep struct {
		HostTCP      attempt  `json:"host_tcp"`
		HostUnix     attempt  `json:"host_unix"`
		Cloudflare   attempt  `json:"cloudflare"`
		Google       attempt  `json:"google"`
		GoogleUDP    attempt  `json:"google_udp"`
		CloudflareV6 attempt  `json:"cloudflare_v6"`
		Interfaces   []string `json:"interfaces"`
	}
	decodeReport(t, res, &rep)
	for what, a := range map[string]attempt{"host 127.0.0.1:" + strconv.Itoa(port): rep.HostTCP, "host abstract socket": rep.HostUnix} {
		if a.Result == "connected" {
			t.Errorf("the sandbox connected to the %s", what)
		}
	}
	for what, a := range map[string]attempt{"1.1.1.1:53": rep.Cloudflare, "8.8.8.8:53": rep.Google, "udp 8.8.8.8:53": rep.GoogleUDP} {
		if a.Result != "ENETUNREACH" || a.MS > 500 {
			t.Errorf("%s: %s after %.0fms, want ENETUNREACH at once", what, a.Result, a.MS)
		}
	}
	if a := rep.CloudflareV6; a.Result == "connected" || a.Result == "timeout" || a.MS > 500 {
		t.Errorf("[2606:4700:4700::1111]:53: %s after %.0fms, want an immediate failure", a.Result, a.MS)
	}
	if !slices.Equal(rep.Interfaces, []string{"lo"}) {
		t.Errorf("network interfaces = %v, want only lo", rep.Interfaces)
	}
	tcp.Close()
	unix.Close()
	if n := accepted.Load(); n > 0 {
		t.Errorf("host check: the host's listeners accepted %d connections from the sandbox", n)
	}
}

func testPrivilegedSyscalls(t *testing.T, s *suite) {
	tok := newToken()
	// Calls without a libc wrapper are made by number.
	vars := syscallVars(t, "clone", "pidfd_getfd", "process_madvise", "open_tree_attr")
	vars["TOKEN"] = tok
	// Each call runs in a child of its own: one that wrongly succeeds
	// (a new user namespace, a tracer) cannot change what the next sees.
	code := program(`import ctypes, errno, json, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def isolated(fn, *args):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            ctypes.set_errno(0)
            ret = fn(*args)
            e = ctypes.get_errno()
            res = errno.errorcode.get(e, str(e)) if ret == -1 else "returned %d" % ret
        except BaseException as ex:
            res = "raised %r" % ex
        os.write(w, res.encode())
        os._exit(0)
    os.close(w)
    res = os.read(r, 4096).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return res
def attach_own_child():
    # A process of the sandbox's own user, and a descendant: without
    # the seccomp filter, attaching to it is allowed.
    child = subprocess.Popen(["{{TOKEN}}", "30"], executable="/bin/sleep")
    try:
        return libc.ptrace(ctypes.c_long(16), child.pid, None, None)
    finally:
        child.kill()
        child.wait()
ns = os.open("/proc/self/ns/net", os.O_RDONLY)
out = {
    "ptrace(TRACEME)": isolated(libc.ptrace, ctypes.c_long(0), 0, None, None),
    "ptrace(ATTACH, 1)": isolated(libc.ptrace, ctypes.c_long(16), 1, None, None),
    "ptrace(ATTACH, own child)": isolated(attach_own_child),
    "mount(tmpfs, /tmp)": isolated(libc.mount, b"none", b"/tmp", b"tmpfs", ctypes.c_ulong(0), None),
    "umount2(/work)": isolated(libc.umount2, b"/work", 2),
    "unshare(CLONE_NEWUSER)": isolated(libc.unshare, 0x10000000),
    "unshare(CLONE_NEWNS)": isolated(libc.unshare, 0x00020000),
    "unshare(CLONE_NEWNET)": isolated(libc.unshare, 0x40000000),
    "setns(net)": isolated(libc.setns, ns, 0),
    "chroot(/tmp)": isolated(libc.chroot, b"/tmp"),
    # clone's flags are in a register the filter reads: a new user or
    # network namespace through clone itself must fail like unshare.
    "clone(CLONE_NEWUSER)": isolated(libc.syscall, ctypes.c_long({{NR_clone}}), ctypes.c_long(0x10000000 | 17), 0, 0, 0, 0),
    "clone(CLONE_NEWNET)": isolated(libc.syscall, ctypes.c_long({{NR_clone}}), ctypes.c_long(0x40000000 | 17), 0, 0, 0, 0),
    # ADDR_NO_RANDOMIZE would turn off address randomisation for what the
    # program starts next.
    "personality(ADDR_NO_RANDOMIZE)": isolated(libc.personality, ctypes.c_ulong(0x0040000)),
    # Reaching into another process: its files, its memory advice.
    "pidfd_getfd(self)": isolated(libc.syscall, ctypes.c_long({{NR_pidfd_getfd}}), os.pidfd_open(os.getpid()), 0, 0),
    "process_madvise(self)": isolated(libc.syscall, ctypes.c_long({{NR_process_madvise}}), os.pidfd_open(os.getpid()), None, 0, 0, 0),
    # The newest call of the mount API (without OPEN_TREE_CLONE it needs
    # no privilege).
    "open_tree_attr(/tmp)": isolated(libc.syscall, ctypes.c_long({{NR_open_tree_attr}}), -100, b"/tmp", 0, None, 0),
}
print(json.dumps(out))
`, vars)
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep map[string]string
	decodeReport(t, res, &rep)
	if len(rep) != 16 {
		t.Errorf("report has %d calls, want 16", len(rep))
	}
	for _, call := range slices.Sorted(maps.Keys(rep)) {
		got := rep[call]
		if why, ok := s.unnamed[strings.SplitN(call, "(", 2)[0]]; ok && got == "ENOSYS" {
			t.Logf("%s: ENOSYS, not EPERM: %s", call, why)
			continue
		}
		if got != "EPERM" {
			t.Errorf("%s: %s, want -1 with EPERM", call, got)
		}
	}
}

func testKillHostProcess(t *testing.T, s *suite) {
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatalf("start host process: %v", err)
	}
	died := make(chan struct{})
	go func() { _ = victim.Wait(); close(died) }()
	t.Cleanup(func() { _ = victim.Process.Kill(); <-died })
	hostPid := victim.Process.Pid

	report := `import errno, json, os, signal
def kill(pid, sig):
    try:
        os.kill(pid, sig)
        return "sent"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
`
	for _, tc := range []struct {
		name   string
		code   string
		status sandbox.Status
		check  func(*testing.T, sandbox.Result)
	}{
		{
			// The host's pid means nothing in the sandbox's PID namespace;
			// its init (pid 1) belongs to root.
			name: "by pid",
			code: report + `print(json.dumps({"host": kill({{PID}}, signal.SIGKILL), "init": kill(1, signal.SIGKILL)}))
`,
			status: sandbox.StatusOK,
			check: func(t *testing.T, res sandbox.Result) {
				var rep struct{ Host, Init string }
				decodeReport(t, res, &rep)
				if rep.Host != "ESRCH" && rep.Host != "EPERM" {
					t.Errorf("kill(host pid %d, SIGKILL) = %s, want ESRCH or EPERM", hostPid, rep.Host)
				}
				if rep.Init != "EPERM" {
					t.Errorf("kill(1, SIGKILL) = %s, want EPERM", rep.Init)
				}
			},
		},
		{
			// kill(-1) signals every process the caller may signal. A
			// child broadcasts SIGTERM, which the main process ignores.
			name: "broadcast SIGTERM",
			code: report + `signal.signal(signal.SIGTERM, signal.SIG_IGN)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, kill(-1, signal.SIGTERM).encode())
    os._exit(0)
os.close(w)
got = os.read(r, 100).decode()
os.waitpid(pid, 0)
print(json.dumps({"broadcast": got}))
`,
			status: sandbox.StatusOK,
		},
		{
			// A child broadcasts SIGKILL: it takes the main process (and
			// so the run) with it, but nothing outside the sandbox.
			name: "broadcast SIGKILL",
			code: `import os, signal, time
if os.fork() == 0:
    os.kill(-1, signal.SIGKILL)
    os._exit(0)
time.sleep(10)
print("survived")
`,
			status: sandbox.StatusKilled,
			check: func(t *testing.T, res sandbox.Result) {
				if res.Signal != "SIGKILL" || len(res.Stdout) != 0 {
					t.Errorf("signal %q, stdout %q; want SIGKILL and nothing printed", res.Signal, res.Stdout)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := newToken()
			code := program(tc.code, map[string]string{"PID": strconv.Itoa(hostPid)})
			res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code}, watch{token: tok})
			wantStatus(t, res, tc.status)
			if tc.check != nil {
				tc.check(t, res)
			}
			select {
			case <-died:
				t.Fatalf("host check: the host process %d died during the run (%v)", hostPid, victim.ProcessState)
			default:
			}
			if st := procState(hostPid); st == "" || st == "Z" {
				t.Fatalf("host check: the host process %d is gone (state %q)", hostPid, st)
			}
			if err := syscall.Kill(hostPid, 0); err != nil {
				t.Fatalf("host check: the host process %d cannot be signalled: %v", hostPid, err)
			}
		})
	}
}

func testBackgroundSurvivors(t *testing.T, s *suite) {
	tok := newToken()
	// Two ways to outlive a program: a child in a session of its own that
	// keeps the program's stdout open, and a classic double-forked daemon.
	// Their argv[0] carries the token.
	code := program(`import json, os, subprocess, time
TOKEN = "{{TOKEN}}"
p = subprocess.Popen([TOKEN + "-session", "1000"], executable="/bin/sleep", start_new_session=True)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    pid2 = os.fork()
    if pid2 == 0:
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execv("/bin/sleep", [TOKEN + "-daemon", "1000"])
    os.write(w, str(pid2).encode())
    os._exit(0)
os.close(w)
daemon = int(os.read(r, 32))
os.waitpid(pid, 0)
def running(pid):
    for _ in range(100):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if TOKEN.encode() in f.read():
                    return True
        except OSError:
            return False
        time.sleep(0.01)
    return False
out = {"session": running(p.pid), "daemon": running(daemon)}
time.sleep(0.3)  # give the host a moment to see them
print(json.dumps(out))
`, map[string]string{"TOKEN": tok})
	res, elapsed := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code,
		Limits: sandbox.Limits{WallTimeMS: 20_000}}, watch{token: tok, expectSeen: true})
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep struct{ Session, Daemon bool }
	decodeReport(t, res, &rep)
	if !rep.Session || !rep.Daemon {
		t.Errorf("the program could not start its background processes (session %v, daemon %v)", rep.Session, rep.Daemon)
	}
	if elapsed > 5*time.Second {
		t.Errorf("Run took %s: it waited for the background processes instead of ending with the program", elapsed)
	}
}

func testSetuidBinaries(t *testing.T, s *suite) {
	tok := newToken()
	// Each set-uid binary is started with a stdin that stays open; once
	// its exec is done (its name changes), its credentials are read from
	// /proc. Set-uid root would show an effective uid of 0.
	code := program(`import json, os, stat, subprocess, time
def status(path):
    d = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            d[k] = " ".join(v.split())
    return d
keys = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
me = status("/proc/self/status")
out = {"self": {k: me.get(k) for k in keys}, "binaries": {}}
for path, args in [("/usr/bin/su", ["root", "-c", "id -u"]), ("/usr/bin/passwd", []),
                   ("/bin/mount", ["-t", "tmpfs", "none", "/tmp"])]:
    if not os.path.exists(path) or not os.stat(path).st_mode & stat.S_ISUID:
        continue
    p = subprocess.Popen([path] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    name, seen = os.path.basename(path), None
    for _ in range(400):
        try:
            st = status("/proc/%d/status" % p.pid)
        except OSError:
            break
        if st.get("Name") == name:
            time.sleep(0.02)  # credentials are committed after the name changes
            try:
                st = status("/proc/%d/status" % p.pid)
            except OSError:
                pass
            seen = {k: st.get(k) for k in ("Uid", "Gid", "CapEff", "CapPrm")}
            break
        time.sleep(0.005)
    p.stdin.close()
    said = p.stdout.read().decode(errors="replace")
    out["binaries"][path] = {"creds": seen, "exit": p.wait(), "said": said[:200]}
print(json.dumps(out))
`, map[string]string{"TOKEN": tok})
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep struct {
		Self     map[string]string `json:"self"`
		Binaries map[string]struct {
			Creds map[string]string `json:"creds"`
			Exit  int               `json:"exit"`
			Said  string            `json:"said"`
		} `json:"binaries"`
	}
	decodeReport(t, res, &rep)
	// Real, effective, saved and filesystem ids: one unprivileged id each,
	// the uid in the runtime's range if it has one.
	uid, uidOK := oneID(rep.Self["Uid"])
	_, gidOK := oneID(rep.Self["Gid"])
	switch {
	case !uidOK || !gidOK:
		t.Errorf("the program's /proc/self/status Uid = %q, Gid = %q, want four times one unprivileged id each", rep.Self["Uid"], rep.Self["Gid"])
	case s.uidCount > 0 && (uid < s.uidBase || uid >= s.uidBase+s.uidCount):
		t.Errorf("the program runs as uid %d, outside the sandbox range [%d, %d)", uid, s.uidBase, s.uidBase+s.uidCount)
	}
	const noCaps = "0000000000000000"
	// No supplementary group, or the program's own gid alone (Docker's
	// exec lists the primary group there too): a supplementary group equal
	// to the gid grants no access the gid does not.
	if g, gid := rep.Self["Groups"], strings.Fields(rep.Self["Gid"]); g != "" && (len(gid) == 0 || g != gid[0]) {
		t.Errorf("the program's /proc/self/status Groups = %q, want none or its own gid %v alone", g, gid)
	}
	want := map[string]string{
		"CapInh": noCaps, "CapPrm": noCaps, "CapEff": noCaps, "CapBnd": noCaps, "CapAmb": noCaps,
		"NoNewPrivs": "1", "Seccomp": "2",
	}
	for k, v := range want {
		if rep.Self[k] != v {
			t.Errorf("the program's /proc/self/status %s = %q, want %q", k, rep.Self[k], v)
		}
	}
	if len(rep.Binaries) == 0 {
		t.Logf("no set-uid binary in the sandbox's root; only the program's own credentials were checked")
	}
	for path, b := range rep.Binaries {
		switch {
		case b.Creds == nil:
			t.Errorf("%s: its credentials could not be read after exec (exit %d, said %q)", path, b.Exit, b.Said)
		case b.Creds["Uid"] != rep.Self["Uid"] || b.Creds["Gid"] != rep.Self["Gid"] || b.Creds["CapEff"] != noCaps || b.Creds["CapPrm"] != noCaps:
			t.Errorf("set-uid %s gained privileges: %v", path, b.Creds)
		default:
			t.Logf("set-uid %s ran as %s, exit %d: %q", path, b.Creds["Uid"], b.Exit, strings.TrimSpace(b.Said))
		}
	}
}

// oneID reads a Uid or Gid line of /proc/<pid>/status (real, effective,
// saved and filesystem ids, space-separated): the id if all four are the
// same and not root.
func oneID(line string) (int, bool) {
	f := strings.Fields(line)
	if len(f) != 4 || f[1] != f[0] || f[2] != f[0] || f[3] != f[0] {
		return 0, false
	}
	id, err := strconv.Atoi(f[0])
	return id, err == nil && id > 0
}

// syscallVars returns NR_<name> for each call, its number on this
// architecture, for programs that make calls by number; it skips t where
// no table is known.
func syscallVars(t *testing.T, names ...string) map[string]string {
	t.Helper()
	info, err := arch.GetInfo("")
	if err != nil {
		t.Skipf("no system call table for this architecture: %v", err)
	}
	vars := map[string]string{}
	for _, name := range names {
		vars["NR_"+name] = strconv.Itoa(info.SyscallNames[name])
	}
	return vars
}
