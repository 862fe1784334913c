package docker

import (
	"bufio"
	"bytes"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

func TestLaunchArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
		want string
		err  bool
	}{
		{"argv", []string{"/usr/bin/env", "-i", "A=1 2", "B=x\ny", "/usr/bin/python3", "/code/main.py"}, "/usr/bin/env\x00-i\x00A=1 2\x00B=x\ny\x00/usr/bin/python3\x00/code/main.py\x00\x00", false},
		{"empty element", []string{"/bin/true", ""}, "", true},
		{"NUL in an element", []string{"/bin/true", "a\x00b"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := launchArgs(tc.argv)
			if (err != nil) != tc.err || string(got) != tc.want {
				t.Fatalf("launchArgs(%q) = %q, %v; want %q, error %v", tc.argv, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestLauncherScript runs launcherScript with bash on the host, as a uid
// of its own (kill -1 as root would reach every process of the host): it
// runs the argv it reads, leaves what follows on stdin to the program,
// ends with the program even when the program left a process holding its
// output (which it kills), and exits with the program's status.
func TestLauncherScript(t *testing.T) {
	testenv.Root(t)
	const uid = DefaultUIDBase + DefaultUIDCount + 700 // no live sandbox's
	launch := func(stdin []byte) ([]byte, error) {
		cmd := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", launcherScript)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		cmd.Dir = "/"
		cmd.Stdin = bytes.NewReader(stdin)
		return cmd.CombinedOutput()
	}
	args := func(argv ...string) []byte {
		b, err := launchArgs(argv)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	out, err := launch(append(args("/usr/bin/env", "-i", "X=a b", "/bin/sh", "-c", `echo "$X"; cat`), "the stdin\x00\n"...))
	if err != nil || string(out) != "a b\nthe stdin\x00\n" {
		t.Fatalf("launcher: %v, output %q; want %q", err, out, "a b\nthe stdin\x00\n")
	}
	if _, err := launch(nil); err == nil {
		t.Fatal("launcher with no argv: ran, want exit 126")
	}
	start := time.Now()
	out, err = launch(args("/bin/sh", "-c", "sleep 30 & echo left; exit 3"))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || string(out) != "left\n" {
		t.Errorf("a program that left a process and exited 3: %v, output %q; want exit 3 and \"left\"", err, out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the launcher ended %v after its program: it waited for the process left behind", d)
	}
	_, err = launch(args("/bin/sh", "-c", "kill -TERM $$"))
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("a program ended by SIGTERM: %v, want exit %d", err, 128+int(syscall.SIGTERM))
	}
}

func TestFixedLimits(t *testing.T) {
	def := sandbox.DefaultLimits().WithDefaults()
	for _, tc := range []struct {
		name  string
		lim   sandbox.Limits
		match bool
	}{
		{"defaults", sandbox.Limits{}, true},
		{"wall time and output are not fixed", sandbox.Limits{WallTimeMS: def.WallTimeMS * 2, OutputBytes: 1000, ArtifactBytes: 10}, true},
		{"CPU time in the same second", sandbox.Limits{CPUTimeMS: (cpuSeconds(def)-1)*1000 + 1}, true},
		{"memory", sandbox.Limits{MemoryBytes: def.MemoryBytes / 2}, false},
		{"disk", sandbox.Limits{DiskBytes: def.DiskBytes / 2}, false},
		{"processes", sandbox.Limits{Processes: def.Processes + 1}, false},
		{"open files", sandbox.Limits{OpenFiles: def.OpenFiles + 1}, false},
		{"file size", sandbox.Limits{FileSizeBytes: 1 << 20}, false},
		{"CPU time", sandbox.Limits{CPUTimeMS: def.CPUTimeMS + 1000}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fixedLimitsOf(tc.lim.WithDefaults()) == fixedLimitsOf(def); got != tc.match {
				t.Fatalf("fits the pool's containers: %v, want %v", got, tc.match)
			}
		})
	}
}

func TestDemux(t *testing.T) {
	stream := bytes.Join([][]byte{frame(1, "pla"), frame(2, "ced\nempty "), frame(1, "alone\n")}, nil)
	r := bufio.NewReader(&demux{r: bytes.NewReader(stream)})
	for _, want := range []string{"placed\n", "empty alone\n"} {
		if got, err := r.ReadString('\n'); err != nil || got != want {
			t.Fatalf("line %q, %v; want %q", got, err, want)
		}
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("read past the stream's end")
	}
}
