package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestCrashRecovery proves what a kill -9 of `crucible serve` leaves on the
// host while runs are executing and queued: every sandbox process dies with
// the server (PDEATHSIG), a server restarted on the same --db marks every
// lost run "interrupted" (none stays queued or running), removes the dead
// server's cgroups at start, the host's mount table gains nothing, and the
// restarted server runs code.
func TestCrashRecovery(t *testing.T) {
	bin := crucibleBinary(t)
	db := filepath.Join(t.TempDir(), "runs.db")

	// The host before anything starts.
	mountsBefore := mountinfo(t)
	cgroupsBefore := sandboxCgroups()
	procsBefore := allProcs()
	t0 := time.Now()
	step := func(what string) { t.Helper(); t.Logf("%6.2fs %s", time.Since(t0).Seconds(), what) }
	t.Logf("before: %d mountinfo lines, %d sandbox cgroups, %d processes", len(mountsBefore), len(cgroupsBefore), len(procsBefore))

	// With one run at a time ({"max_concurrent": 1} in serve's config),
	// one run executes and the others wait.
	const maxConcurrent, nRuns = 1, 3
	extra := configFlag(t, `{"max_concurrent": 1}`)

	first := startServer(t, "server 1", db, extra...)
	step("server 1 up")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	var runIDs []string
	for i := range nRuns {
		req := sandbox.Request{
			Language: sandbox.Python,
			Code:     fmt.Sprintf("import time\nprint('run %d started', flush=True)\ntime.sleep(120)\n", i),
			Limits:   sandbox.Limits{WallTimeMS: 300_000},
		}
		id, err := first.Client.RunAsync(ctx, req)
		if err != nil {
			t.Fatalf("RunAsync %d: %v", i, err)
		}
		runIDs = append(runIDs, id)
	}

	// Wait until the server has as many running as it may, the rest queued,
	// and each running program is a live python process below the server.
	wantRunning := min(maxConcurrent, nRuns)
	var statuses map[string]sandbox.Status
	var programs []proc
	ok := poll(20*time.Second, func() bool {
		statuses = map[string]sandbox.Status{}
		running := 0
		for _, id := range runIDs {
			rec, err := first.Client.GetRun(ctx, id)
			if err != nil {
				t.Fatalf("GetRun(%s): %v", id, err)
			}
			statuses[id] = rec.Status
			if rec.Status == api.StatusRunning {
				running++
			}
		}
		programs = nil
		for _, p := range descendants(first.PID()) {
			if strings.HasPrefix(p.Comm, "python") {
				programs = append(programs, p)
			}
		}
		return running >= wantRunning && len(programs) >= wantRunning
	})
	if !ok {
		t.Fatalf("after 20s: statuses %v and %d python processes below the server, want %d running", statuses, len(programs), wantRunning)
	}
	step("runs running")
	queued := 0
	for _, st := range statuses {
		if st == api.StatusQueued {
			queued++
		}
	}
	if queued == 0 {
		t.Errorf("no run is queued (statuses %v): the crash should catch runs both executing and waiting", statuses)
	}
	t.Logf("before the crash: statuses %v", statuses)

	// A session holds a sandbox of its own (a live interpreter) too.
	sess, err := first.Client.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	if res, err := sess.Exec(ctx, sandbox.Cell{Code: "x = 1"}); err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("session Exec: %+v, %v", res, err)
	}

	// The sandboxes as the host sees them: every process below the server
	// (the inits of the running run, the session and the prestarted
	// sandbox, and the programs in them) and the server's cgroups.
	sandboxProcs := descendants(first.PID())
	var lines []string
	for _, p := range sandboxProcs {
		lines = append(lines, "  "+p.String())
	}
	t.Logf("server 1 (pid %d) has %d descendants:\n%s", first.PID(), len(sandboxProcs), strings.Join(lines, "\n"))
	ownCgroups := cgroupsOwnedBy(first.PID())
	if len(ownCgroups) == 0 {
		t.Fatalf("server 1 (pid %d) has no cgroup %d.* under %v: the cgroup layout is not what this test expects", first.PID(), first.PID(), cgroupParents())
	}
	t.Logf("server 1 cgroups: %v", ownCgroups)

	// Crash.
	killedPID := first.PID()
	first.Kill9()
	step("killed")
	t.Logf("killed server 1 (pid %d) with SIGKILL", killedPID)

	// PDEATHSIG: every sandbox process dies with the server, within seconds.
	if !poll(5*time.Second, func() bool { return len(survivors(sandboxProcs)) == 0 }) {
		var left []string
		for _, p := range survivors(sandboxProcs) {
			now, _ := readProc(p.PID)
			left = append(left, "  "+now.String())
		}
		t.Errorf("5s after kill -9 of the server, %d of its sandbox processes still run:\n%s", len(left), strings.Join(left, "\n"))
	}
	step("sandboxes gone")
	if left := cgroupsOwnedBy(killedPID); len(left) > 0 {
		t.Logf("cgroups the dead server left (the next server must remove them): %v", left)
	}

	// Restart on the same store.
	second := startServer(t, "server 2", db, extra...)
	step("server 2 up")

	// The session died with its server: the new one does not know it.
	r := second.do(t, "POST", "/v1/sessions/"+sess.ID()+"/exec", "application/json", strings.NewReader(`{"code":"x"}`))
	checkAPIError(t, "exec in a session of the killed server, asked of server 2", r, 404, "not_found", "")

	// Every lost run now reads "interrupted"; none is queued or running.
	for _, id := range runIDs {
		rec, err := second.Client.GetRun(ctx, id)
		if err != nil {
			t.Errorf("GetRun(%s) after the restart: %v", id, err)
			continue
		}
		if rec.Status != api.StatusInterrupted {
			t.Errorf("run %s was %q at the crash and is %q after the restart, want %q",
				id, statuses[id], rec.Status, api.StatusInterrupted)
		}
		if rec.FinishedAt == nil {
			t.Errorf("interrupted run %s has no finished_at", id)
		}
	}
	for _, st := range []string{"queued", "running"} {
		runs, _, err := second.Client.ListRuns(ctx, client.ListOptions{Status: st})
		if err != nil {
			t.Errorf("ListRuns(status=%s): %v", st, err)
		} else if len(runs) > 0 {
			t.Errorf("after the restart %d runs are still %q", len(runs), st)
		}
	}
	interrupted, _, err := second.Client.ListRuns(ctx, client.ListOptions{Status: "interrupted"})
	if err != nil {
		t.Errorf("ListRuns(status=interrupted): %v", err)
	} else if len(interrupted) != nRuns {
		t.Errorf("ListRuns(status=interrupted) holds %d runs, want %d", len(interrupted), nRuns)
	}

	step("runs checked")
	// The new server removed the dead server's cgroups at start.
	if !poll(3*time.Second, func() bool { return len(cgroupsOwnedBy(killedPID)) == 0 }) {
		t.Errorf("after the restart, cgroups of the killed server (pid %d) remain: %v", killedPID, describeCgroups(cgroupsOwnedBy(killedPID)))
	}

	// No mount leaked into the host's mount namespace.
	var newMounts []string
	for line := range mountinfo(t) {
		if !mountsBefore[line] {
			newMounts = append(newMounts, line)
		}
	}
	sort.Strings(newMounts)
	if len(newMounts) > 0 {
		t.Errorf("the host's mountinfo has %d lines it did not have before server 1 started:\n%s", len(newMounts), strings.Join(newMounts, "\n"))
	}

	// No process of the old sandboxes remains, and no process started from
	// the crucible binary lives outside server 2's tree.
	if left := survivors(sandboxProcs); len(left) > 0 {
		t.Errorf("after the restart, processes of server 1's sandboxes remain: %v", left)
	}
	binInfo, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	// The processes are listed before server 2's tree, so that a sandbox
	// server 2 starts meanwhile (its pools fill) is in the tree too.
	procs := allProcs()
	mine := map[int]bool{second.PID(): true}
	for _, p := range descendants(second.PID()) {
		mine[p.PID] = true
	}
	for pid, p := range procs {
		if _, existed := procsBefore[pid]; existed || mine[pid] || p.State == 'Z' {
			continue
		}
		if fi, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && os.SameFile(fi, binInfo) {
			t.Errorf("a crucible process outside server 2 remains: %v", p)
		}
	}

	step("host checked")
	// The restarted server works.
	res, err := second.Client.CreateRun(ctx, sandbox.Request{Language: sandbox.Python, Code: "print('alive after the crash')"})
	if err != nil {
		t.Fatalf("Run on server 2: %v", err)
	}
	if res.Status != sandbox.StatusOK || string(res.Stdout) != "alive after the crash\n" {
		t.Errorf("Run on server 2: status %q stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	if rec, err := second.Client.GetRun(ctx, res.ID); err != nil || rec.Status != sandbox.StatusOK {
		t.Errorf("GetRun of the new run: %+v, %v", rec, err)
	}
	if slices.Contains(runIDs, res.ID) {
		t.Errorf("the new run reuses the id %s of an interrupted one", res.ID)
	}
}

// describeCgroups lists dirs with the processes each still holds.
func describeCgroups(dirs []string) string {
	var b strings.Builder
	for _, d := range dirs {
		procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		fmt.Fprintf(&b, "\n  %s (cgroup.procs: %q)", d, strings.TrimSpace(string(procs)))
	}
	return b.String()
}
