package sandboxtest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file looks at the host from outside the sandbox: which processes
// exist, what is mounted, which cgroups a runtime created, which files
// appeared. Each hostile run is bracketed by these checks, so a test fails
// when something of the run escaped or survived, not only when the program
// reports a wrong status.

// hostProc is a host process that carries a run's marker.
type hostProc struct {
	pid     int
	state   string
	comm    string
	cmdline string
}

func (p hostProc) String() string {
	return "pid " + strconv.Itoa(p.pid) + " (" + p.comm + ", state " + p.state + "): " + p.cmdline
}

// findProcesses scans every process of the host and returns those whose
// command line, name (comm) or initial environment contains one of tokens.
// Hostile programs mark what they start with their token: in argv (exec -a,
// argv[0]), in comm (prctl PR_SET_NAME, which fork inherits) and in the
// environment (the suite passes the token in Request.Env). Reading other
// processes' environ needs root, which the suite's runtimes need anyway.
func findProcesses(tokens ...string) []hostProc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var found []hostProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		environ, _ := os.ReadFile(filepath.Join(dir, "environ"))
		for _, tok := range tokens {
			tb := []byte(tok)
			if bytes.Contains(comm, tb) || bytes.Contains(cmdline, tb) || bytes.Contains(environ, tb) {
				found = append(found, hostProc{
					pid:     pid,
					state:   procState(pid),
					comm:    strings.TrimSpace(string(comm)),
					cmdline: strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))),
				})
				break
			}
		}
	}
	return found
}

// procState returns the one-letter state of pid ("R", "S", "Z", ...) from
// /proc/<pid>/stat, or "" when the process is gone.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name in parentheses may hold spaces; the state follows
	// the last closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// mountTable returns the lines of the test process's mountinfo: the host's
// mount namespace. A sandbox must never add or remove a mount there. The
// mounts a container engine makes for its containers are left out
// (EngineMount, engine.go says why that hides nothing of ours).
func mountTable(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatalf("read host mount table: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !EngineMount(l) {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

// diffLines returns the lines only in a and only in b, both sorted.
func diffLines(a, b []string) (onlyA, onlyB []string) {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	for l, n := range count {
		for ; n > 0; n-- {
			onlyA = append(onlyA, l)
		}
		for ; n < 0; n++ {
			onlyB = append(onlyB, l)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return onlyA, onlyB
}

// cgroupGlobs are where runtimes create a run's cgroup, named
// "<owner>.<sequence>", where owner is the pid of the process that called
// the native runtime's Run (this one, unless Options.CgroupOwnerPID says
// otherwise): under crucible/ in every cgroup v1 hierarchy, or under
// crucible/ of the unified v2 tree.
func cgroupGlobs(owner int) []string {
	prefix := strconv.Itoa(owner) + "."
	return []string{
		"/sys/fs/cgroup/*/crucible/" + prefix + "*",
		"/sys/fs/cgroup/crucible/" + prefix + "*",
	}
}

// cgroupParents are the existing crucible/ directories that hold run
// cgroups.
func cgroupParents() []string {
	var dirs []string
	for _, g := range []string{"/sys/fs/cgroup/*/crucible", "/sys/fs/cgroup/crucible"} {
		m, _ := filepath.Glob(g)
		dirs = append(dirs, m...)
	}
	return dirs
}

// runCgroups lists the cgroup directories of the runs of process owner.
func runCgroups(owner int) []string {
	var dirs []string
	for _, g := range cgroupGlobs(owner) {
		m, _ := filepath.Glob(g)
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				dirs = append(dirs, d)
			}
		}
	}
	sort.Strings(dirs)
	return slices.Compact(dirs)
}

// cgroupPids returns the processes in cgroup directory dir.
func cgroupPids(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processCarries reports whether process pid carries one of tokens.
func processCarries(pid int, tokens []string) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	for _, name := range []string{"comm", "cmdline", "environ"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		for _, tok := range tokens {
			if bytes.Contains(b, []byte(tok)) {
				return true
			}
		}
	}
	return false
}

// leftoverCgroups returns the run cgroups that should not exist now. For a
// runtime without a pool every cgroup of its owner is a leftover once no
// run is in progress. A runtime that keeps pre-started sandboxes between
// runs owns cgroups that hold their idle processes; those are allowed, but
// an empty cgroup (a run's that was never removed) or one holding a process
// marked with a run's token is not.
func (s *suite) leftoverCgroups(tokens []string) []string {
	var bad []string
	for _, d := range runCgroups(s.owner) {
		if !s.pooled {
			bad = append(bad, d)
			continue
		}
		pids := cgroupPids(d)
		if len(pids) == 0 {
			bad = append(bad, d+" (empty)")
			continue
		}
		for _, pid := range pids {
			if processCarries(pid, tokens) {
				bad = append(bad, d+" (holds marked pid "+strconv.Itoa(pid)+")")
				break
			}
		}
	}
	return bad
}

// fileRoots are the host directories searched for files named after a
// run's token, each to a depth: the places a sandbox could write to if its
// mounts leaked (the host's /tmp also hosts the runtime's staging mount).
var fileRoots = []struct {
	dir   string
	depth int
}{
	{"/", 1}, {"/tmp", 3}, {"/var/tmp", 2}, {"/dev/shm", 2}, {"/work", 1}, {"/root", 1}, {"/mnt", 2},
}

// findFiles returns host paths under fileRoots whose name contains token.
func findFiles(token string) []string {
	var found []string
	budget := 50000 // entries; /tmp of a busy machine can be large
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth == 0 || budget <= 0 {
			return
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			budget--
			p := filepath.Join(dir, e.Name())
			if strings.Contains(e.Name(), token) {
				found = append(found, p)
			}
			if e.IsDir() && p != "/proc" && p != "/sys" {
				walk(p, depth-1)
			}
		}
	}
	for _, r := range fileRoots {
		walk(r.dir, r.depth)
	}
	sort.Strings(found)
	return slices.Compact(found)
}

// hostState is what is compared before and after a run.
type hostState struct {
	mounts   []string
	hostname string
	contents map[string][]byte
}

// snapshot records the host state before a run and checks the run's
// marker is not already present (which would make the after-check
// meaningless).
func (s *suite) snapshot(t *testing.T, w watch) hostState {
	t.Helper()
	if w.token == "" {
		t.Fatal("sandboxtest: a hostile run needs a token")
	}
	if ps := findProcesses(w.token); len(ps) > 0 {
		t.Fatalf("before the run, host processes already carry token %s: %v", w.token, ps)
	}
	for _, p := range w.paths {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("before the run, host path %s already exists", p)
		}
	}
	st := hostState{mounts: mountTable(t), contents: map[string][]byte{}}
	st.hostname, _ = os.Hostname()
	for _, f := range w.contentFiles {
		b, err := os.ReadFile(f)
		if err == nil {
			st.contents[f] = b
		}
	}
	return st
}

// checkHost fails t for everything the run left on the host: processes
// carrying its token, a changed mount table, leftover cgroups, files named
// after its token, paths it tried to create, host files whose content
// changed, a changed host name.
func (s *suite) checkHost(t *testing.T, before hostState, w watch) {
	t.Helper()
	for _, p := range findProcesses(w.token) {
		t.Errorf("host check: process of the run survived it: %v", p)
	}
	added, removed := diffLines(mountTable(t), before.mounts)
	for _, l := range added {
		t.Errorf("host check: mount appeared in the host's mount namespace: %s", l)
	}
	for _, l := range removed {
		t.Errorf("host check: mount disappeared from the host's mount namespace: %s", l)
	}
	s.checkCgroups(t, []string{w.token})
	for _, l := range s.runtimeLeftovers() {
		t.Errorf("host check: %s", l)
	}
	for _, p := range w.paths {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("host check: the sandbox created host path %s", p)
			_ = os.RemoveAll(p)
		}
	}
	for _, f := range findFiles(w.token) {
		t.Errorf("host check: file named after the run's token appeared on the host: %s", f)
	}
	for f, old := range before.contents {
		now, err := os.ReadFile(f)
		if err != nil || !bytes.Equal(now, old) {
			t.Errorf("host check: host file %s changed during the run", f)
		}
		if bytes.Contains(now, []byte(w.token)) {
			t.Errorf("host check: host file %s now holds the run's token", f)
		}
	}
	if h, _ := os.Hostname(); h != before.hostname {
		t.Errorf("host check: host name changed from %q to %q", before.hostname, h)
	}
}

// checkCgroups fails t if the runs marked with tokens left cgroups.
func (s *suite) checkCgroups(t *testing.T, tokens []string) {
	t.Helper()
	for _, d := range s.settledLeftovers(tokens) {
		t.Errorf("host check: cgroup left behind after the run: %s", d)
	}
}

// settledLeftovers is leftoverCgroups, except that with a pool, whose
// refill may be creating a cgroup (still empty) at this moment, a leftover
// is allowed a moment to fill.
func (s *suite) settledLeftovers(tokens []string) []string {
	bad := s.leftoverCgroups(tokens)
	for i := 0; len(bad) > 0 && s.pooled && i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		bad = s.leftoverCgroups(tokens)
	}
	return bad
}

// runtimeLeftovers returns what Options.Leftovers finds, if it is set.
func (s *suite) runtimeLeftovers() []string {
	if s.leftovers == nil {
		return nil
	}
	return s.leftovers()
}
