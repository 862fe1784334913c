package linux_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/sandbox/sandboxtest"
)

// heldFDs are host descriptors the test process holds open without
// close-on-exec while it starts runtimes, as a crucible started from a
// shell that opened them would: a directory anyone may write in, and a
// root-only file open for appending.
type heldFDs struct {
	dir, file     string
	dirFD, fileFD int
	dirID, fileID fileID
	content       []byte
}

// fileID is a file's identity: its device and inode.
type fileID struct{ Dev, Ino uint64 }

// holdHostFDs opens the two descriptors, closed when t ends.
func holdHostFDs(t *testing.T) *heldFDs {
	t.Helper()
	h := &heldFDs{dir: filepath.Join(t.TempDir(), "held"), content: []byte("host secret\n")}
	h.file = filepath.Join(filepath.Dir(h.dir), "root-only")
	if err := os.Mkdir(h.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.dir, 0o777); err != nil { // past the umask: a reachable handle would let the sandbox user create files
		t.Fatal(err)
	}
	if err := os.WriteFile(h.file, h.content, 0o600); err != nil {
		t.Fatal(err)
	}
	h.dirFD = openHeld(t, h.dir, syscall.O_RDONLY|syscall.O_DIRECTORY)
	h.fileFD = openHeld(t, h.file, syscall.O_WRONLY|syscall.O_APPEND)
	for _, fd := range []int{h.dirFD, h.fileFD} {
		if flags, err := fcntl(fd, syscall.F_GETFD); err != nil || flags&syscall.FD_CLOEXEC != 0 {
			t.Fatalf("fd %d: flags %#x (%v), want it open without close-on-exec", fd, flags, err)
		}
	}
	h.dirID, h.fileID = identify(t, h.dir), identify(t, h.file)
	return h
}

// openHeld opens path with flags and without close-on-exec (which
// syscall.Open, unlike os.Open, does not add), at a descriptor number of
// 300 or more, closed when t ends. (A low number could be one that
// starting a child overwrites: os.StartProcess uses the numbers past the
// child's files as scratch space.)
func openHeld(t *testing.T, path string, flags int) int {
	t.Helper()
	fd, err := syscall.Open(path, flags, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	high, err := fcntl(fd, syscall.F_DUPFD, 300)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(high) })
	return high
}

func fcntl(fd, cmd int, arg ...int) (int, error) {
	a := 0
	if len(arg) > 0 {
		a = arg[0]
	}
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(a))
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

func identify(t *testing.T, path string) fileID {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fileID{Dev: st.Dev, Ino: st.Ino}
}

// fdProbe is the conformance suite's hostile program (sandboxtest.FDProbe,
// whose InheritedDescriptors case runs it against every runtime): it
// attacks the descriptors TARGETS names and reports every one it has.
const fdProbe = sandboxtest.FDProbe

// probeResult is what fdProbe printed: each descriptor's report.
type probeResult map[string]struct {
	Dev, Ino uint64
	Mode     string
	Created  bool
	Wrote    int
	Entries  []string
	Parent   []string
	Error    string
}

// probe returns fdProbe attacking targets, with token the name it
// creates and the bytes it writes.
func probe(token string, targets ...fileID) string {
	ts := make([]string, len(targets))
	for i, id := range targets {
		ts[i] = fmt.Sprintf("[%d, %d]", id.Dev, id.Ino)
	}
	return fmt.Sprintf("TARGETS = [%s]\nTOKEN = %q\n", strings.Join(ts, ", "), token) + fdProbe
}

// probe returns fdProbe attacking h's directory and file.
func (h *heldFDs) probe(token string) string { return probe(token, h.dirID, h.fileID) }

// check fails t if res, fdProbe's run, reached either held descriptor, or
// had any descriptor beyond its stdio unless kernelChannel (a session's
// kernel holds its private channel, two pipes, during a cell); then checks
// from the host that the file and the directory are as they were.
func (h *heldFDs) check(t *testing.T, res sandbox.Result, token string, kernelChannel bool) {
	t.Helper()
	var found probeResult
	if res.Status != sandbox.StatusOK || json.Unmarshal(bytes.TrimSpace(res.Stdout), &found) != nil {
		t.Fatalf("want the probe's report, got %s", describe(res))
	}
	for fd, r := range found {
		id := fileID{r.Dev, r.Ino}
		switch {
		case id == h.dirID:
			t.Errorf("fd %s is the host directory the test holds: %+v", fd, r)
		case id == h.fileID:
			t.Errorf("fd %s is the host file the test holds: %+v", fd, r)
		case !kernelChannel:
			t.Errorf("fd %s is open beyond the program's stdio: %+v", fd, r)
		case !strings.HasPrefix(r.Mode, "p"):
			t.Errorf("fd %s is open in a cell and is not the kernel's channel (a pipe): %+v", fd, r)
		}
	}
	if kernelChannel && len(found) > 2 {
		t.Errorf("a cell has %d descriptors beyond its stdio, want the kernel's channel alone: %+v", len(found), found)
	}
	h.checkHost(t, token)
}

// checkHost fails t if the held file changed or anything was created in
// the held directory, or the token shows up in the file.
func (h *heldFDs) checkHost(t *testing.T, token string) {
	t.Helper()
	if b, err := os.ReadFile(h.file); err != nil || !bytes.Equal(b, h.content) {
		t.Errorf("the root-only host file now holds %q (%v), want %q", b, err, h.content)
	}
	if ents, err := os.ReadDir(h.dir); err != nil || len(ents) != 0 {
		t.Errorf("the host directory now holds %v (%v), want nothing", ents, err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, token)); err == nil {
		t.Errorf("the sandbox created %s on the host", token)
	}
}

// TestInheritedFDsUnreachable proves that a descriptor the process
// running the runtime holds without close-on-exec reaches no sandbox: a
// hostile program probes every descriptor number in each way a program
// is started (a sandbox built for the run, one built ahead, a zygote
// slot's fork, a single-run warm interpreter, a session's cells, cold and
// warm) and finds nothing but its stdio (a cell: and its kernel's
// channel); the host's file and directory are unchanged. The probe is
// first run on the host, with the same descriptors, to show it finds
// them (attacking nothing).
func TestInheritedFDsUnreachable(t *testing.T) {
	testenv.Root(t)
	h := holdHostFDs(t)
	control := exec.Command("python3", "-c", probe("control"))
	out, err := control.Output()
	if err != nil {
		t.Fatalf("the probe on the host: %v", err)
	}
	var seen probeResult
	if err := json.Unmarshal(out, &seen); err != nil {
		t.Fatalf("the probe on the host printed %q: %v", out, err)
	}
	for _, want := range []struct {
		fd int
		id fileID
	}{{h.dirFD, h.dirID}, {h.fileFD, h.fileID}} {
		if r, ok := seen[strconv.Itoa(want.fd)]; !ok || (fileID{r.Dev, r.Ino}) != want.id {
			t.Fatalf("the probe on the host did not find fd %d: %s", want.fd, out)
		}
	}

	warmHits := func(rt *linux.Runtime) uint64 { return rt.WarmStats().Hits }
	dataScience := func(t *testing.T, opts linux.Options) linux.Options { // a zygote with numpy, pandas and matplotlib loaded
		o := imageOptions(testenv.Image(t, "datascience"))
		o.Warm = opts.Warm
		return o
	}
	runs := []struct {
		name   string
		opts   linux.Options
		image  func(*testing.T, linux.Options) linux.Options // nil: the host's root
		served func(rt *linux.Runtime) uint64                // the pool's hits, or nil
	}{
		{"cold", linux.Options{}, nil, nil},
		{"prestarted", linux.Options{Prestart: 1}, nil, func(rt *linux.Runtime) uint64 { return rt.PoolStats().Hits }},
		{"zygote slot", linux.Options{Warm: 1}, nil, warmHits},
		{"zygote slot of the data-science image", linux.Options{Warm: 1}, dataScience, warmHits},
		{"single-run warm", linux.Options{Warm: 1, SingleRunWarm: true}, nil, warmHits},
	}
	for _, tc := range runs {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if tc.image != nil {
				opts = tc.image(t, opts)
			}
			rt := newRuntime(t, opts)
			for i := range 2 { // a slot's second run too
				if tc.served != nil {
					awaitPools(t, rt)
				}
				var before uint64
				if tc.served != nil {
					before = tc.served(rt)
				}
				token := uniqueToken()
				res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: h.probe(token)})
				if tc.served != nil && tc.served(rt) != before+1 {
					t.Fatalf("run %d was not served by the pool", i)
				}
				h.check(t, res, token, false)
			}
		})
	}
	for _, tc := range []struct {
		name string
		opts linux.Options
		warm bool
	}{
		{"session", linux.Options{}, false},
		{"warm session", linux.Options{WarmSessions: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, tc.opts)
			if tc.warm {
				awaitWarmSessions(t, rt)
			}
			s := newSession(t, rt, sandbox.Limits{})
			if tc.warm && rt.WarmSessionStats().Hits != 1 {
				t.Fatalf("the session was not a warm one: %+v", rt.WarmSessionStats())
			}
			for range 2 {
				token := uniqueToken()
				h.check(t, execCode(t, s, h.probe(token)), token, true)
			}
		})
	}
}

// awaitPools waits until rt's prestart and warm pools are full.
func awaitPools(t *testing.T, rt *linux.Runtime) {
	t.Helper()
	awaitWarm(t, rt)
	deadline := time.Now().Add(2 * time.Minute)
	for st := rt.PoolStats(); st.Ready < st.Size; st = rt.PoolStats() {
		if time.Now().After(deadline) {
			t.Fatalf("the prestart pool did not fill within 2 minutes: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
