package sandboxtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Descriptors the process calling Run holds open without close-on-exec,
// as a crucible started from a shell that opened them would: none may
// reach a sandbox, whichever way the runtime starts the program (a child
// of this process, a process a pool made earlier, an exec a daemon
// starts).

// FDProbe is a hostile program (Python) for the preamble TARGETS = [[dev,
// ino], ...] and TOKEN = "...": it looks at every descriptor it has from
// 3 to 1023 (and any other /proc/self/fd lists), and attacks each that is
// one of TARGETS: a directory is listed, left through "..", and a file
// named TOKEN is created in it; a regular file is written to. It prints a
// JSON object per descriptor found: its device, inode and mode, and what
// the attacks did. Any descriptor found beyond stdio is a finding.
const FDProbe = `import json, os, stat
fds = set(range(3, 1024))
try:
    fds |= {int(n) for n in os.listdir("/proc/self/fd")}
except OSError:
    pass
found = {}
for fd in sorted(fds):
    if fd < 3:
        continue
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    r = {"dev": st.st_dev, "ino": st.st_ino, "mode": stat.filemode(st.st_mode)}
    found[fd] = r
    if [st.st_dev, st.st_ino] not in TARGETS:
        continue
    if stat.S_ISDIR(st.st_mode):
        try:
            r["entries"] = os.listdir(fd)
            up = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            r["parent"] = os.listdir(up)
            os.close(up)
            os.close(os.open(TOKEN, os.O_CREAT | os.O_WRONLY, 0o666, dir_fd=fd))
            r["created"] = True
        except OSError as e:
            r["error"] = str(e)
    elif stat.S_ISREG(st.st_mode):
        try:
            r["wrote"] = os.write(fd, TOKEN.encode())
        except OSError as e:
            r["error"] = str(e)
print(json.dumps(found))
`

// heldFD is a host file or directory the test process holds open.
type heldFD struct {
	path     string
	fd       int
	dev, ino uint64
}

// holdFD opens path with flags, without close-on-exec, at a descriptor
// number of 300 or more (a low one could be one that starting a child
// overwrites: os.StartProcess uses the numbers past the child's files as
// scratch space), closed when t ends.
func holdFD(t *testing.T, path string, flags int) heldFD {
	t.Helper()
	fd, err := syscall.Open(path, flags, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	high, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD, 300)
	if errno != 0 {
		t.Fatalf("dup %s: %v", path, errno)
	}
	t.Cleanup(func() { syscall.Close(int(high)) })
	var st syscall.Stat_t
	if err := syscall.Fstat(int(high), &st); err != nil {
		t.Fatal(err)
	}
	return heldFD{path: path, fd: int(high), dev: uint64(st.Dev), ino: st.Ino}
}

// testInheritedDescriptors holds a directory anyone may write in and a
// root-only file open for appending, both without close-on-exec, and runs
// FDProbe twice (the second run may come from a sandbox a pool made after
// the descriptors were opened): the program has nothing beyond its stdio,
// and from the host the file and the directory are as they were.
func testInheritedDescriptors(t *testing.T, s *suite) {
	base := t.TempDir()
	dir, file := filepath.Join(base, "held"), filepath.Join(base, "root-only")
	content := []byte("host secret\n")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	// Past the umask: a reachable handle would let the sandbox's user
	// create files.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, content, 0o600); err != nil {
		t.Fatal(err)
	}
	d := holdFD(t, dir, syscall.O_RDONLY|syscall.O_DIRECTORY)
	f := holdFD(t, file, syscall.O_WRONLY|syscall.O_APPEND)
	for i := range 2 {
		tok := newToken()
		code := fmt.Sprintf("TARGETS = [[%d, %d], [%d, %d]]\nTOKEN = %q\n", d.dev, d.ino, f.dev, f.ino, tok) + FDProbe
		res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code}, watch{token: tok, paths: []string{filepath.Join(dir, tok)}})
		wantExit(t, res, sandbox.StatusOK, 0)
		var found map[string]json.RawMessage
		decodeReport(t, res, &found)
		for fd, r := range found {
			t.Errorf("run %d: descriptor %s is open beyond the program's stdio: %s", i+1, fd, r)
		}
		if b, err := os.ReadFile(file); err != nil || !bytes.Equal(b, content) {
			t.Errorf("run %d: the root-only host file now holds %q (%v), want %q", i+1, b, err, content)
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Errorf("run %d: the host directory now holds %v (%v), want nothing", i+1, ents, err)
		}
	}
	// The positive control: the same probe on the host, with the same
	// descriptors, finds both (it attacks nothing: no target is given).
	if !probeSeesHost(t, d, f) {
		t.Errorf("the probe run on the host does not find the held descriptors %d and %d: the check proves nothing", d.fd, f.fd)
	}
}

// probeSeesHost runs FDProbe without targets as a child of this process,
// which inherits d and f, and reports whether it lists both.
func probeSeesHost(t *testing.T, d, f heldFD) bool {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Logf("no %s on the host: the positive control is not run", py)
		return true
	}
	// No descriptor is passed explicitly: d and f are inherited as any
	// descriptor without close-on-exec is.
	out, err := runHostPython(py, "TARGETS = []\nTOKEN = ''\n"+FDProbe)
	if err != nil {
		t.Fatalf("the probe on the host: %v", err)
	}
	var found map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(out), &found); err != nil {
		t.Fatalf("the probe on the host printed %q: %v", out, err)
	}
	_, okD := found[fmt.Sprint(d.fd)]
	_, okF := found[fmt.Sprint(f.fd)]
	return okD && okF && strings.Contains(string(out), fmt.Sprint(d.ino))
}

// runHostPython runs code with the host's python3 as a child of this
// process and returns its standard output.
func runHostPython(py, code string) ([]byte, error) {
	return exec.Command(py, "-c", code).Output()
}
