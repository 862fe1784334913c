package docker

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestContainerNetns: the proxy's namespace is only ever the one of a
// process in the container's cgroup and not this process's own: the
// daemon's pid is checked on this host, whatever it says.
func TestContainerNetns(t *testing.T) {
	testenv.Root(t)
	// A process in a network namespace of its own, as a container's init.
	other := exec.Command("unshare", "--net", "sleep", "infinity")
	other.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := other.Start(); err != nil {
		t.Fatalf("unshare --net: %v", err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	for own := nsLink(t, os.Getpid()); nsLink(t, other.Process.Pid) == own; time.Sleep(time.Millisecond) {
	}
	// What the cgroup file of pid names: the container id, in a real
	// container's (the daemon names the cgroup after it).
	cgroupOf := func(pid int) string {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		line := strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)[0]
		return line[strings.LastIndex(line, ":")+1:]
	}
	const someID = "ac6bb47f604862acd40c0d534dc293db9aa8168c0fe8d1391bc481b16ade9fd3"
	for _, tc := range []struct {
		name string
		pid  int
		id   string
		err  string // "" the namespace opens
	}{
		{"its own namespace, its cgroup", other.Process.Pid, cgroupOf(other.Process.Pid), ""},
		{"not in the container's cgroup (a remote daemon's pid)", other.Process.Pid, someID, "is not in its cgroup on this host"},
		{"the host's namespace", os.Getpid(), cgroupOf(os.Getpid()), "is in the host's network namespace"},
		{"no such process", 1 << 22, someID, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := containerNetns(tc.pid, tc.id)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("containerNetns: %v", err)
				}
				defer ns.Close()
				if got, want := nsLink(t, os.Getpid(), "fd", strconv.Itoa(int(ns.Fd()))), nsLink(t, tc.pid); got != want {
					t.Errorf("the descriptor names %s, the process's namespace is %s", got, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("containerNetns: %v, want an error saying %q", err, tc.err)
			}
			if ns != nil {
				t.Errorf("a namespace was returned with the error")
			}
		})
	}
}

// nsLink reads /proc/PID/ns/net, or /proc/PID/<rel...>.
func nsLink(t *testing.T, pid int, rel ...string) string {
	t.Helper()
	p := "/proc/" + strconv.Itoa(pid) + "/ns/net"
	if len(rel) > 0 {
		p = "/proc/" + strconv.Itoa(pid) + "/" + strings.Join(rel, "/")
	}
	l, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
