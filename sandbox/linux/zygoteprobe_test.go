package linux_test

import (
	"context"
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

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// hostPython runs reachZygote on the host, where hidepid hides nothing.
const hostPython = "/usr/bin/python3"

// zygoteFromHost is what the host sees of a slot's zygote while a run
// of the slot lives.
type zygoteFromHost struct {
	pid            int               // the zygote's pid on the host
	runUID, runGID int               // the run's ids (all four alike)
	uid, gid       []string          // the zygote's real, effective, saved and file system ids
	memOwner       uint32            // the owner of /proc/<pid>/mem: root unless the zygote is dumpable
	reach          map[string]string // reachZygote's report, run on the host with the run's ids
}

// probeZygoteFromHost runs, in rt's zygote slot, a run that names itself
// (its comm) and sleeps; finds it on the host, and its parent, the
// zygote; reads the zygote's ids and whether it is dumpable (the kernel
// gives root the /proc files of a process that is not); and runs
// reachZygote against the zygote on the host, as a process with the
// run's uid and gid and no capability. On the host's /proc, which hides
// nothing, every attempt meets the layer hidepid stands in front of in
// the sandbox: the zygote's real and saved ids, which are not the run
// user's, and its not being dumpable. The run is cancelled once done.
func probeZygoteFromHost(t *testing.T, rt *linux.Runtime) zygoteFromHost {
	t.Helper()
	if _, err := os.Stat(hostPython); err != nil {
		t.Fatalf("the host probe needs %s: %v", hostPython, err)
	}
	awaitWarm(t, rt)
	marker := fmt.Sprintf("zprobe%d", os.Getpid()%1000000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan sandbox.Result, 1)
	go func() {
		res, _ := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Limits: sandbox.Limits{WallTimeMS: 120_000},
			Code: fmt.Sprintf("import ctypes, time\nctypes.CDLL(None).prctl(15, b%q, 0, 0, 0)\ntime.sleep(120)", marker)})
		done <- res
	}()
	var runPid int
	for deadline := time.Now().Add(time.Minute); runPid == 0; time.Sleep(10 * time.Millisecond) {
		select {
		case res := <-done:
			t.Fatalf("the run ended before the host saw it: %s", describe(res))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process named %s on the host after a minute", marker)
		}
		comms, _ := filepath.Glob("/proc/[0-9]*/comm")
		for _, c := range comms {
			if b, err := os.ReadFile(c); err == nil && strings.TrimSpace(string(b)) == marker {
				runPid, _ = strconv.Atoi(filepath.Base(filepath.Dir(c)))
			}
		}
	}
	run := statusFields(t, runPid)
	z := zygoteFromHost{}
	z.pid, _ = strconv.Atoi(run["PPid"][0])
	z.runUID, _ = strconv.Atoi(run["Uid"][0])
	z.runGID, _ = strconv.Atoi(run["Gid"][0])
	if strings.Join(run["Uid"], " ") != strings.Repeat(run["Uid"][0]+" ", 3)+run["Uid"][0] {
		t.Fatalf("the run's uids are %v: want one uid", run["Uid"])
	}
	zs := statusFields(t, z.pid)
	z.uid, z.gid = zs["Uid"], zs["Gid"]
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/mem", z.pid), &st); err != nil {
		t.Fatal(err)
	}
	z.memOwner = st.Uid
	probe := exec.Command(hostPython, "-c", reachZygote)
	probe.Env = []string{"ZYGOTE_PID=" + strconv.Itoa(z.pid)}
	probe.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(z.runUID), Gid: uint32(z.runGID), Groups: []uint32{}}}
	out, err := probe.CombinedOutput()
	if err != nil || json.Unmarshal(out, &z.reach) != nil {
		t.Fatalf("the host probe: %v: %s", err, out)
	}
	cancel()
	<-done
	return z
}

// statusFields returns the fields of /proc/<pid>/status on the host.
func statusFields(t *testing.T, pid int) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[k] = strings.Fields(v)
		}
	}
	return fields
}
