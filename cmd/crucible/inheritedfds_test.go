package main

import (
	"bufio"
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

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// inheritedProbe is a hostile program: it looks at every descriptor from
// 3 to 1023 (and any other /proc/self/fd lists) and attacks each that is
// one of TARGETS (device and inode pairs: the test's directory and file;
// any other descriptor found fails the test too, and is not the test's
// to change): a directory is left through ".." and a file is created in
// it, a regular file is written to. It prints its uid and the
// descriptors it found, then waits two seconds, while the test looks at
// crucible's descriptors.
const inheritedProbe = `import json, os, stat, sys, time
fds = set(range(3, 1024))
fds |= {int(n) for n in os.listdir("/proc/self/fd")}
found = []
for fd in sorted(fds):
    if fd < 3:
        continue
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    found.append([fd, stat.filemode(st.st_mode)])
    if [st.st_dev, st.st_ino] not in TARGETS:
        continue
    try:
        if stat.S_ISDIR(st.st_mode):
            os.listdir(os.open("..", os.O_RDONLY, dir_fd=fd))
            os.close(os.open(TOKEN, os.O_CREAT | os.O_WRONLY, 0o666, dir_fd=fd))
        elif stat.S_ISREG(st.st_mode):
            os.write(fd, TOKEN.encode())
    except OSError:
        pass
print(json.dumps({"uid": os.getuid(), "found": found}), flush=True)
time.sleep(2)
`

// TestRunInheritedFDs is the command-line form of the attack on inherited
// descriptors: `( exec 8<dir 9>>root-only-file; crucible run --local
// prog.py )`, and the same descriptors held by a `crucible serve` (warm
// and prestarted sandboxes) that runs prog.py for `crucible run`. The
// program finds no descriptor beyond its stdio, the file and the
// directory are unchanged on the host, and the crucible that inherited
// them holds both close-on-exec.
func TestRunInheritedFDs(t *testing.T) {
	testenv.Root(t)
	for _, serve := range []bool{false, true} {
		t.Run(map[bool]string{false: "run --local", true: "serve"}[serve], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "held")
			file := filepath.Join(filepath.Dir(dir), "root-only")
			content := []byte("host secret\n")
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, content, 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// As the shell's exec 8<dir 9>>file: crucible starts with them
			// as fds 8 and 9, without close-on-exec (entries 0 to 4 are fds
			// 3 to 7, closed).
			held := []*os.File{nil, nil, nil, nil, nil, d, f}

			token := "crtok" + strconv.Itoa(os.Getpid())
			var targets []string
			for _, path := range []string{dir, file} {
				var st syscall.Stat_t
				if err := syscall.Stat(path, &st); err != nil {
					t.Fatal(err)
				}
				targets = append(targets, fmt.Sprintf("[%d, %d]", st.Dev, st.Ino))
			}
			code := fmt.Sprintf("TARGETS = [%s]\nTOKEN = %q\n", strings.Join(targets, ", "), token) + inheritedProbe
			var cmd *exec.Cmd
			holder := 0 // the crucible that inherited them
			if serve {
				sock, _, pid := startLocalServeWith(t, "", held, "--warm", "1", "--prestart", "1", "--image", "host",
					"--config", writeTemp(t, "serve.json", `{"uid_base": `+strconv.Itoa(serveUIDBase)+`, "uid_count": 1000}`))
				cmd = cli{}.command("run", "-c", code)
				cmd.Env = append(cmd.Env, "CRUCIBLE_SOCKET="+sock)
				holder = pid
			} else {
				cmd = cli{}.command("run", "--local", "-c", code)
				cmd.ExtraFiles = held
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if holder == 0 {
				holder = cmd.Process.Pid
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			for _, fd := range []int{8, 9} { // while the program runs
				if flags := fdFlags(t, holder, fd); flags&0o2000000 == 0 { // O_CLOEXEC
					t.Errorf("crucible holds the inherited fd %d without close-on-exec (flags %o)", fd, flags)
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("crucible run: %v\n%s", err, stderr.String())
			}
			var report struct {
				UID   int
				Found [][]any
			}
			if err := json.Unmarshal([]byte(line), &report); err != nil {
				t.Fatalf("want the probe's report, got %q (%v)\n%s", line, err, stderr.String())
			}
			if onServer := report.UID >= serveUIDBase && report.UID < serveUIDBase+1000; onServer != serve {
				t.Fatalf("the program ran as uid %d: on the server %v, want %v", report.UID, onServer, serve)
			}
			if len(report.Found) != 0 {
				t.Errorf("the program found descriptors beyond its stdio: %v", report.Found)
			}
			if b, err := os.ReadFile(file); err != nil || !bytes.Equal(b, content) {
				t.Errorf("the root-only host file now holds %q (%v), want %q", b, err, content)
			}
			if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
				t.Errorf("the host directory now holds %v (%v), want nothing", ents, err)
			}
		})
	}
}

// fdFlags returns the open flags of process pid's descriptor fd, from
// /proc/<pid>/fdinfo.
func fdFlags(t *testing.T, pid, fd int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", pid, fd))
	if err != nil {
		t.Fatalf("crucible's fd %d: %v", fd, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			flags, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			if err != nil {
				t.Fatal(err)
			}
			return flags
		}
	}
	t.Fatalf("no flags in crucible's fdinfo for fd %d: %s", fd, b)
	return 0
}
