package linux_test

import (
	"context"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/sandbox/sandboxtest"
)

// The tests in this file check the pool of warm sessions: a session taken
// from it must be indistinguishable from one started for its request, in
// every limit, file and variable its first cell can observe.

// awaitWarmSessions waits until rt's pool of warm sessions is full again.
func awaitWarmSessions(tb testing.TB, rt *linux.Runtime) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for st := rt.WarmSessionStats(); st.Ready < st.Size; st = rt.WarmSessionStats() {
		if time.Now().After(deadline) {
			tb.Fatalf("the warm-session pool did not fill within 2 minutes: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sessionReport is a cell that prints what a session's first cell can see
// of how it was started: the working tmpfs's size, the rlimits, the
// memory in /proc/meminfo, a variable, and each input file's mode, owner
// (root or not) and immutable flag.
const sessionReport = `import os, fcntl, resource, struct
def immutable(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        return struct.unpack('i', fcntl.ioctl(fd, 0x80086601, b'\0' * 4))[0] & 0x10 != 0
    finally:
        os.close(fd)
st = os.statvfs('/work')
print('disk', st.f_blocks * st.f_frsize)
for name in ('FSIZE', 'NOFILE', 'NPROC', 'CPU'):
    print(name, resource.getrlimit(getattr(resource, 'RLIMIT_' + name)))
print(open('/proc/meminfo').readline().split()[1])
print('GREETING', os.environ.get('GREETING'))
for root, dirs, files in sorted(os.walk('.')):
    for n in sorted(dirs + files):
        p = os.path.join(root, n)
        st = os.stat(p)
        print(p, oct(st.st_mode), st.st_uid == 0, immutable(p))
`

// TestWarmSessionMatchesCold proves a session served from the warm pool
// shows its first cell what a cold one shows, for default and custom
// limits, read-only and writable files and a variable; that every one of
// them was indeed served warm, except a session setting a variable the
// interpreter reads at start (PYTHONPATH), which starts cold and honours
// it; and that the read-only files resist the conformance suite's attack.
func TestWarmSessionMatchesCold(t *testing.T) {
	files := []sandbox.File{
		{Name: "data/in.csv", Content: []byte("a,b\n1,2\n"), ReadOnly: true},
		{Name: "data/deep/more.csv", Content: []byte("c\n3\n"), ReadOnly: true},
		{Name: "top.txt", Content: []byte("top\n"), ReadOnly: true},
		{Name: "run.sh", Content: []byte("echo hi\n"), Executable: true},
		{Name: "notes/mine.txt", Content: []byte("mine\n")},
	}
	custom := sandbox.Limits{MemoryBytes: 300 * sandbox.MiB, DiskBytes: 200 * sandbox.MiB, OpenFiles: 100, FileSizeBytes: 5 * sandbox.MiB, Processes: 32}
	cases := []struct {
		name string
		req  sandbox.SessionRequest
		warm bool
	}{
		{"defaults", sandbox.SessionRequest{}, true},
		{"custom limits", sandbox.SessionRequest{Limits: custom}, true},
		{"more than the defaults", sandbox.SessionRequest{Limits: sandbox.Limits{MemoryBytes: sandbox.GiB, DiskBytes: sandbox.GiB, OpenFiles: 4096, Processes: 256}}, true},
		{"files", sandbox.SessionRequest{Files: files}, true},
		{"env", sandbox.SessionRequest{Env: map[string]string{"GREETING": "hi"}}, true},
		{"start-up env", sandbox.SessionRequest{Env: map[string]string{"PYTHONPATH": "/work/lib"}}, false},
	}
	cold := newRuntime(t, linux.Options{})
	warm := newRuntime(t, linux.Options{WarmSessions: 1})
	open := func(t *testing.T, rt *linux.Runtime, req sandbox.SessionRequest) sandbox.Session {
		t.Helper()
		req.Language = sandbox.Python
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		s, err := rt.NewSession(ctx, req)
		if err != nil {
			t.Fatalf("NewSession: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := execCode(t, open(t, cold, tc.req), sessionReport)
			wantOK(t, c)
			awaitWarmSessions(t, warm)
			before := warm.WarmSessionStats()
			w := execCode(t, open(t, warm, tc.req), sessionReport)
			wantOK(t, w)
			if string(w.Stdout) != string(c.Stdout) {
				t.Errorf("the first cell of a session\ncold sees:\n%s\nwarm sees:\n%s", c.Stdout, w.Stdout)
			}
			if hit := warm.WarmSessionStats().Hits > before.Hits; hit != tc.warm {
				t.Errorf("served warm: %v, want %v", hit, tc.warm)
			}
		})
	}
}

// TestWarmSessionReplaced proves the pool asks for a replacement when a
// session takes a warm one, not when the session ends: the pool fills
// again while the session is open, and the session still works.
func TestWarmSessionReplaced(t *testing.T) {
	rt := newRuntime(t, linux.Options{WarmSessions: 1})
	awaitWarmSessions(t, rt)
	s := newSession(t, rt, sandbox.Limits{})
	if st := rt.WarmSessionStats(); st.Hits != 1 {
		t.Fatalf("the session was not served warm: %+v", st)
	}
	awaitWarmSessions(t, rt)
	if res := execCode(t, s, "x = 6 * 7\nx"); res.Value != "42" {
		t.Errorf("cell in the warm session: %s", describe(res))
	}
}

// TestWarmSessionPreloaded proves a warm session of the data-science image
// has pandas imported before its first cell, which reads a read-only CSV;
// and that a session with less memory than that holds starts cold.
func TestWarmSessionPreloaded(t *testing.T) {
	opts := imageOptions(testenv.Image(t, "datascience"))
	opts.WarmSessions = 1
	rt := newRuntime(t, opts)
	awaitWarmSessions(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python,
		Files: []sandbox.File{{Name: "data/x.csv", Content: []byte("a,b\n1,2\n3,4\n"), ReadOnly: true}}})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close()
	res := execCode(t, s, "import sys\nloaded = 'pandas' in sys.modules\nimport pandas as pd\n(loaded, pd.read_csv('data/x.csv').shape)")
	if res.Status != sandbox.StatusOK || res.Value != "(True, (2, 2))" {
		t.Errorf("want pandas preloaded and the CSV read, got %s", describe(res))
	}
	if st := rt.WarmSessionStats(); st.Hits != 1 {
		t.Errorf("the session was not served warm: %+v", st)
	}
	// A session allowed less memory than the warm kernel holds starts
	// cold, and leaves the pool's session for another.
	awaitWarmSessions(t, rt)
	small, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python, Limits: sandbox.Limits{MemoryBytes: 48 * sandbox.MiB}})
	if err != nil {
		t.Fatalf("NewSession with 48 MiB: %v", err)
	}
	defer small.Close()
	if res := execCode(t, small, "import sys\n'pandas' in sys.modules"); res.Value != "False" {
		t.Errorf("a session of 48 MiB: %s, want a cold one, pandas not imported", describe(res))
	}
	if st := rt.WarmSessionStats(); st.Hits != 1 || st.Ready != st.Size {
		t.Errorf("a session of 48 MiB took the warm one: %+v", st)
	}
}

// warmSessionsFirst is a runtime whose every session first waits (within
// its context, at most a few seconds) until the warm-session pool is
// full, so that each session the pool can serve is served warm.
type warmSessionsFirst struct{ *linux.Runtime }

func (w warmSessionsFirst) NewSession(ctx context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	deadline := time.Now().Add(10 * time.Second)
	for st := w.WarmSessionStats(); st.Ready < st.Size && ctx.Err() == nil && time.Now().Before(deadline); st = w.WarmSessionStats() {
		time.Sleep(5 * time.Millisecond)
	}
	return w.Runtime.NewSession(ctx, req)
}

// TestConformanceWarmSessions runs the conformance suite against a runtime
// that serves sessions from a warm pool, waiting for the pool before each
// session: every hostile cell, and the attack on read-only inputs, must
// be handled by a warm session as by a cold one. It fails if no session
// was served warm.
func TestConformanceWarmSessions(t *testing.T) {
	testenv.Root(t)
	sandboxtest.RunWith(t, func(t *testing.T) sandbox.Runtime {
		rt, err := linux.New(linux.Options{WarmSessions: 2})
		if err != nil {
			t.Fatalf("linux.New: %v", err)
		}
		// Registered before the suite's own cleanup, so it runs after the
		// suite has closed the runtime and checked the host.
		t.Cleanup(func() {
			st := rt.WarmSessionStats()
			t.Logf("warm-session pool over the suite: %d hits, %d misses", st.Hits, st.Misses)
			if st.Hits == 0 {
				t.Errorf("no session of the suite was served warm")
			}
		})
		return warmSessionsFirst{rt}
	}, defaultUIDs)
}
