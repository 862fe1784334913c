package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Requests a runtime must refuse before anything runs.

func testInputRejected(t *testing.T, s *suite) {
	tok := newToken()
	// If anything ran, it would sleep (and be seen on the host) first.
	sleeper := func(mod func(*sandbox.Request)) sandbox.Request {
		r := withToken(sandbox.Request{Language: sandbox.Python, Code: "import time\ntime.sleep(5)\n"}, tok)
		mod(&r)
		return r
	}
	file := func(name string) sandbox.File { return sandbox.File{Name: name, Content: sandbox.Data("x")} }
	many := make([]sandbox.File, sandbox.MaxFiles+1)
	for i := range many {
		many[i] = file("f" + strconv.Itoa(i))
	}
	cases := []struct {
		name  string
		req   sandbox.Request
		field string // the InputError's Field starts with this
	}{
		{"dot-dot file name", sleeper(func(r *sandbox.Request) { r.Files = []sandbox.File{file("../escape")} }), "files[0].name"},
		{"dot-dot inside file name", sleeper(func(r *sandbox.Request) { r.Files = []sandbox.File{file("data/../../escape")} }), "files[0].name"},
		{"absolute file name", sleeper(func(r *sandbox.Request) { r.Files = []sandbox.File{file("/etc/passwd")} }), "files[0].name"},
		{"NUL in file name", sleeper(func(r *sandbox.Request) { r.Files = []sandbox.File{file("a\x00b")} }), "files[0].name"},
		{"duplicate file names", sleeper(func(r *sandbox.Request) { r.Files = []sandbox.File{file("a.txt"), file("a.txt")} }), "files[1].name"},
		{"too many files", sleeper(func(r *sandbox.Request) { r.Files = many }), "files"},
		{"unknown language", sleeper(func(r *sandbox.Request) { r.Language = "cobol" }), "language"},
		{"negative limit", sleeper(func(r *sandbox.Request) { r.Limits.WallTimeMS = -1 }), "limits.wall_time_ms"},
		{"absurd memory limit", sleeper(func(r *sandbox.Request) { r.Limits.MemoryBytes = 1 << 40 }), "limits.memory_bytes"},
		{"bad env name", sleeper(func(r *sandbox.Request) { r.Env["1BAD"] = "x" }), "env"},
		{"network allowlist entry", sleeper(func(r *sandbox.Request) { r.Network.Allow = []string{"example.org", "bad host"} }), "network.allow[1]"},
	}

	// What the runtime creates while the refused requests are made: its
	// own watch, if it has one, else new cgroups of the suite's owner.
	var created func() []string
	var active bool
	if s.watchCreation != nil {
		var stop func()
		created, stop = s.watchCreation()
		defer stop()
		active = true
	} else {
		watcher := watchCgroupCreation(t, s)
		defer watcher.close()
		created, active = watcher.created, watcher.fd >= 0
	}
	before := s.snapshot(t, watch{token: tok})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
			defer cancel()
			start := time.Now()
			res, err := s.rt.Run(ctx, tc.req)
			elapsed := time.Since(start)
			var ie *sandbox.InputError
			switch {
			case err == nil:
				t.Fatalf("Run accepted the request: status %s, reason %q", res.Status, res.Reason)
			case !sandbox.IsInputError(err) || !errors.As(err, &ie):
				t.Fatalf("Run returned %T %v, want a *sandbox.InputError", err, err)
			case !strings.HasPrefix(ie.Field, tc.field):
				t.Errorf("InputError field %q, want %q (%v)", ie.Field, tc.field, err)
			}
			if elapsed > time.Second {
				t.Errorf("Run took %s to refuse the request: did something run?", elapsed)
			}
			if ps := findProcesses(tok); len(ps) > 0 {
				t.Errorf("host check: the refused program is running: %v", ps)
			}
		})
	}
	s.remember(tok)
	s.checkHost(t, before, watch{token: tok})
	for _, name := range created() {
		t.Errorf("host check: a sandbox was created for a refused request: %s", name)
	}

	// Positive control: a valid run must be seen by the same watch, or
	// the check above proves nothing.
	if active {
		res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: "print('ran')\n"}, watch{token: newToken()})
		wantExit(t, res, sandbox.StatusOK, 0)
		if len(created()) == 0 {
			t.Errorf("positive control: the sandbox of a valid run was not seen created; the check for refused requests proves nothing")
		}
	}
}

// testNoLanguage: a request that names no language either is refused
// naming "language" (the native runtime wants the canonical name) or runs
// as Python (the service, and so a remote client, takes the API's default).
// Nothing else: no other interpreter, no half run.
func testNoLanguage(t *testing.T, s *suite) {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	res, err := s.rt.Run(ctx, sandbox.Request{Code: "print(6 * 7)\n"})
	var ie *sandbox.InputError
	switch {
	case errors.As(err, &ie):
		if ie.Field != "language" {
			t.Errorf("InputError field %q, want language (%v)", ie.Field, err)
		}
	case err != nil:
		t.Fatalf("Run returned %T %v, want a result or a *sandbox.InputError", err, err)
	default:
		wantExit(t, res, sandbox.StatusOK, 0)
		if string(res.Stdout) != "42\n" || res.Language != sandbox.Python {
			t.Errorf("ran with language %q, stdout %q; want python, \"42\\n\"", res.Language, res.Stdout)
		}
	}
}

// cgroupWatch watches the directories where runs' cgroups are made and
// records every directory of the suite's cgroup owner created there
// (inotify), so that a cgroup made and removed again within a refused Run
// is still caught.
type cgroupWatch struct {
	fd    int            // inotify instance, -1 when not watching
	dirs  map[int]string // watch descriptor -> directory
	owner int            // the pid the cgroups are named after
}

func watchCgroupCreation(t *testing.T, s *suite) *cgroupWatch {
	t.Helper()
	w := &cgroupWatch{fd: -1, dirs: map[int]string{}, owner: s.owner}
	if s.pooled {
		// A pool refills by creating cgroups at any moment; creation
		// proves nothing about the refused requests.
		t.Logf("the runtime pools sandboxes: cgroup creation is not watched")
		return w
	}
	dirs := cgroupParents()
	if len(dirs) == 0 {
		// No run has created its parent yet: watch one level up.
		dirs, _ = filepath.Glob("/sys/fs/cgroup/*")
		dirs = append(dirs, "/sys/fs/cgroup")
	}
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	w.fd = fd
	for _, d := range dirs {
		wd, err := syscall.InotifyAddWatch(fd, d, syscall.IN_CREATE)
		if err == nil {
			w.dirs[wd] = d
		}
	}
	if len(w.dirs) == 0 {
		t.Fatalf("cannot watch any of %v for new cgroups", dirs)
	}
	return w
}

// created returns the cgroups of the owner (or their crucible parent)
// created since the watch began.
func (w *cgroupWatch) created() []string {
	if w.fd < 0 {
		return nil
	}
	prefix := strconv.Itoa(w.owner) + "."
	var names []string
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(w.fd, buf)
		if n <= 0 || err != nil {
			break
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			name := strings.TrimRight(string(nameBytes), "\x00")
			if strings.HasPrefix(name, prefix) || name == "crucible" {
				names = append(names, fmt.Sprintf("%s/%s", w.dirs[int(ev.Wd)], name))
			}
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
	return names
}

func (w *cgroupWatch) close() {
	if w.fd >= 0 {
		syscall.Close(w.fd)
	}
}
