package linux_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// hangGuard is how long a call into a session may take before a test
// calls it hung: no speed is measured, only that the call answers at all
// (well below the kernel's 45 s lease-break time).
const hangGuard = 20 * time.Second

// within runs call and fails t if it has not returned after hangGuard;
// the call is then left running.
func within(t *testing.T, what string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		t.Errorf("%s: no answer after %s: the call is blocked", what, hangGuard)
		return nil
	}
}

// specialFilesCell plants, in a session's working directory, files that
// would block a host that opened them as ordinary files: a FIFO with no
// reader (an open for writing waits for one forever), a FIFO the kernel
// holds open for reading (an open for writing succeeds, and the upload
// would go into the program's pipe), a bound socket, and a regular file
// under a write lease (an open waits up to the lease-break time, 45 s).
// SIGIO, which breaks the lease, is ignored, so the lease is kept.
const specialFilesCell = `import fcntl, os, signal, socket
signal.signal(signal.SIGIO, signal.SIG_IGN)
os.mkfifo('data.csv')
os.makedirs('sub')
os.mkfifo('sub/held.fifo')
held = os.open('sub/held.fifo', os.O_RDONLY | os.O_NONBLOCK)
sock = socket.socket(socket.AF_UNIX)
sock.bind('sock')
open('leased.txt', 'w').write('mine')
lease = os.open('leased.txt', os.O_RDONLY)
fcntl.fcntl(lease, fcntl.F_SETLEASE, fcntl.F_WRLCK)
'planted'`

// TestSessionSpecialFiles proves the session file API never blocks on,
// writes into or reads from a file the program controls that is not a
// plain regular file: each WriteFile and ReadFile answers with an input
// error naming the file, ListFiles answers, the files are as the program
// left them (nothing went into its pipe, the leased file kept its content), the session keeps running cells,
// and Close answers.
func TestSessionSpecialFiles(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	if res := execCode(t, s, specialFilesCell); res.Status != sandbox.StatusOK || res.Value != "'planted'" {
		t.Fatalf("planting the files: %s", describe(res))
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	for _, name := range []string{"sock", "sub/held.fifo", "leased.txt", "data.csv"} {
		t.Run(name, func(t *testing.T) {
			err := within(t, "WriteFile "+name, func() error { return s.WriteFile(ctx, name, []byte("upload")) })
			if !sandbox.IsInputError(err) || !strings.Contains(err.Error(), name) {
				t.Errorf("WriteFile(%q) = %v, want an input error naming the file", name, err)
			}
			var got []byte
			err = within(t, "ReadFile "+name, func() (err error) { got, err = s.ReadFile(ctx, name); return err })
			if !sandbox.IsInputError(err) || !strings.Contains(err.Error(), name) || len(got) > 0 {
				t.Errorf("ReadFile(%q) = %q, %v; want an input error naming the file", name, got, err)
			}
		})
	}
	var list []sandbox.FileInfo
	if err := within(t, "ListFiles", func() (err error) { list, err = s.ListFiles(ctx); return err }); err != nil {
		t.Errorf("ListFiles: %v", err)
	}
	for _, fi := range list {
		if fi.Name == "data.csv" || fi.Name == "sock" || fi.Name == "sub/held.fifo" {
			t.Errorf("ListFiles lists %q, which is not a regular file or a directory", fi.Name)
		}
	}
	res := execCode(t, s, `import stat
([stat.S_ISFIFO(os.stat(n).st_mode) for n in ('data.csv', 'sub/held.fifo')], os.read(held, 100), os.pread(lease, 100, 0))`)
	if want := "([True, True], b'', b'mine')"; res.Status != sandbox.StatusOK || res.Value != want {
		t.Errorf("after the calls, inside the sandbox: %s; want value %s (FIFOs kept, nothing written into the pipe)", describe(res), want)
	}
	if err := within(t, "Close", s.Close); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestSessionReaperNotBlocked proves one session cannot stop the runtime
// from closing idle sessions: while an upload onto a FIFO is pending in
// session A (it blocked for ever, holding A's lock, before the fix), the
// reaper closes A when it is idle, and then closes B, which goes idle
// only afterwards.
func TestSessionReaperNotBlocked(t *testing.T) {
	rt := newRuntime(t, linux.Options{SessionIdleTimeout: time.Second})
	a := newSession(t, rt, sandbox.Limits{})
	b := newSession(t, rt, sandbox.Limits{})
	wantOK(t, execCode(t, a, "import os\nos.mkfifo('data.csv')"))
	uploaded := make(chan error, 1)
	go func() { uploaded <- a.WriteFile(context.Background(), "data.csv", []byte("x")) }()
	// Keep B busy until the reaper has taken A.
	aDone := a.(interface{ Done() <-chan struct{} }).Done()
	for deadline := time.Now().Add(hangGuard); ; {
		select {
		case <-aDone:
		default:
			if time.Now().After(deadline) {
				t.Fatalf("the reaper never closed idle session A")
			}
			wantOK(t, execCode(t, b, "1"))
			time.Sleep(200 * time.Millisecond)
			continue
		}
		break
	}
	// B is now left idle: the reaper must get to it.
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(100 * time.Millisecond) {
		if _, open := rt.Session(b.ID()); !open {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle session B is still open %s after A was reaped: the reaper is stuck", hangGuard)
		}
	}
	select {
	case err := <-uploaded:
		if err == nil {
			t.Errorf("WriteFile onto a FIFO succeeded")
		}
	case <-time.After(hangGuard):
		t.Errorf("WriteFile onto a FIFO still has not answered")
	}
}
