package main

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestDoctor: crucible doctor reports each runtime this host offers as
// ok with what it found, and one it lacks as missing, with the fix, and
// exits 69 when the runtime asked for is missing: a Docker daemon that
// does not answer (DOCKER_HOST naming a socket nobody listens on) takes
// docker and gvisor away, not native.
func TestDoctor(t *testing.T) {
	testenv.Root(t)
	testenv.Docker(t)
	nowhere := "DOCKER_HOST=unix://" + filepath.Join(t.TempDir(), "no-docker.sock")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want []string
	}{
		{"all", nil, nil, 0, []string{"native  ok  root; namespaces mnt pid net ipc uts cgroup; cgroups v", "docker  ok  Docker Engine ", "gvisor  ok  Docker Engine ", "runsc at "}},
		{"docker", nil, []string{"--runtime", "docker"}, 0, []string{"docker  ok  Docker Engine "}},
		{"docker missing", []string{nowhere}, []string{"--runtime", "docker"}, exitRuntimeMissing, []string{"docker  missing", "missing: a Docker daemon that answers", "fix: as root: scripts/setup.sh"}},
		{"gvisor missing", []string{nowhere}, []string{"--runtime", "gvisor"}, exitRuntimeMissing, []string{"gvisor  missing", "fix: as root: scripts/setup.sh"}},
		{"native still there", []string{nowhere}, nil, 0, []string{"native  ok", "docker  missing", "gvisor  missing"}},
		{"unknown", nil, []string{"--runtime", "firecracker"}, exitUsage, nil},
	} {
		cmd := crucibleCommand(append([]string{"doctor"}, tc.args...)...)
		cmd.Env = append(cmd.Env, tc.env...)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != tc.code {
			t.Errorf("%s: exit %d, want %d:\n%s", tc.name, code, tc.code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out)
			}
		}
	}
}

// TestDoctorDockerWithoutRoot: on a host whose daemon puts containers in
// cgroup v1, the docker runtime needs root (Crucible writes each
// container's socket-buffer limit itself): doctor says so to a member of
// the docker group who is not root, rather than ok, and exits 69.
func TestDoctorDockerWithoutRoot(t *testing.T) {
	testenv.Root(t)
	testenv.Docker(t)
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.kmem.tcp.limit_in_bytes"); err != nil {
		t.Skip("not a cgroup v1 host: the docker runtime needs no root here")
	}
	grp, err := user.LookupGroup("docker")
	if err != nil {
		t.Fatalf("the docker group (docker.io makes it): %v", err)
	}
	gid, _ := strconv.Atoi(grp.Gid)
	// A copy of the test binary the other uid can reach (t.TempDir's
	// parents are root's alone).
	dir, err := os.MkdirTemp("", "doctor-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe := filepath.Join(dir, "crucible")
	if err := exec.Command("cp", os.Args[0], exe).Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "doctor", "--runtime", "docker")
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1", "NO_COLOR=", "HOME=/")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{uint32(gid)}}}
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil {
		t.Fatalf("start doctor as uid 65534: %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != exitRuntimeMissing || !strings.Contains(string(out), "missing: root on this host") {
		t.Errorf("doctor as uid 65534 in the docker group: exit %d, want %d saying root is missing:\n%s", code, exitRuntimeMissing, out)
	}
}

// TestRuntimesInHelp: crucible --help and the --runtime flag of every
// command that runs code name the three runtimes and doctor.
func TestRuntimesInHelp(t *testing.T) {
	root := newRootCommand()
	for _, want := range []string{"native", "docker", "gvisor", "crucible doctor"} {
		if !strings.Contains(root.Long, want) {
			t.Errorf("crucible --help lacks %q:\n%s", want, root.Long)
		}
	}
	for _, name := range []string{"run", "session", "agent", "analyst", "eval", "serve", "mcp"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags().Lookup("runtime")
		if f == nil {
			t.Errorf("crucible %s has no --runtime", name)
			continue
		}
		for _, want := range []string{"native", "docker", "gvisor"} {
			if !strings.Contains(f.Usage, want) {
				t.Errorf("crucible %s --runtime's help lacks %q: %s", name, want, f.Usage)
			}
		}
		if cmd.Flags().Lookup("docker-image") == nil {
			t.Errorf("crucible %s has no --docker-image", name)
		}
	}
}
