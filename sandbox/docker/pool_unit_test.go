package docker

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

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

// TestLauncherScript runs launcherScript with bash on the host: it runs
// the argv it reads and leaves what follows on stdin to the program.
func TestLauncherScript(t *testing.T) {
	args, err := launchArgs([]string{"/usr/bin/env", "-i", "X=a b", "/bin/sh", "-c", `echo "$X"; cat`})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", launcherScript)
	cmd.Stdin = bytes.NewReader(append(args, "the stdin\x00\n"...))
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "a b\nthe stdin\x00\n" {
		t.Fatalf("launcher: %v, output %q; want %q", err, out, "a b\nthe stdin\x00\n")
	}
	cmd = exec.Command("/bin/bash", "--noprofile", "--norc", "-c", launcherScript)
	cmd.Stdin = strings.NewReader("")
	if err := cmd.Run(); err == nil {
		t.Fatal("launcher with no argv: ran, want exit 126")
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

func TestOwnerGone(t *testing.T) {
	host, _ := os.Hostname()
	ended := exec.Command("/bin/true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	start, err := startTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		owner string
		gone  bool
	}{
		{"this process", poolOwner, false},
		{"this pid, another start", host + "/" + strconv.Itoa(os.Getpid()) + "/" + start + "1", true},
		{"a process that ended", host + "/" + strconv.Itoa(ended.Process.Pid) + "/1", true},
		{"another host", "elsewhere/1/1", false},
		{"malformed", host + "/x/1", false},
		{"no owner", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownerGone(tc.owner); got != tc.gone {
				t.Fatalf("ownerGone(%q) = %v, want %v", tc.owner, got, tc.gone)
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
