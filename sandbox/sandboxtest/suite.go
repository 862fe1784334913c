// Package sandboxtest is the conformance suite every sandbox.Runtime must
// pass: the same hostile programs, limits, languages and request checks for
// each backend, so that "runs untrusted code safely" means the same thing
// whichever runtime a deployment picks.
//
// Every hostile program is judged twice: by the Result the runtime returns
// (exact status, exit code, output) and by looking at the host from outside
// the sandbox before and after the run: no process of the run may survive
// it, the host's mount table must be unchanged, the run's cgroup must be
// gone, and no file the program tried to write outside its sandbox may
// exist on the host. See hostcheck.go for how each is observed.
package sandboxtest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Run runs the conformance suite against the runtime newRuntime returns.
// A runtime package wires it up in a test of its own:
//
//	func TestConformance(t *testing.T) {
//		testenv.Root(t) // skips, or fails under CI, unless root
//		sandboxtest.Run(t, func(t *testing.T) sandbox.Runtime {
//			rt, err := myruntime.New(myruntime.Options{})
//			if err != nil {
//				t.Fatalf("myruntime.New: %v", err)
//			}
//			return rt
//		})
//	}
//
// newRuntime is called once, with Run's t; every subtest shares the
// runtime it returns. If the runtime has a method Close() error (to release
// sandboxes it keeps ready), the suite calls it at the end, once, and then
// checks that nothing of the runtime is left on the host: the factory must
// not close it itself.
//
// The subtests run one after another, never in parallel: the host checks
// compare host-wide state (processes, mounts, cgroups, files) before and
// after each run, so do not mark the calling test parallel either. The
// suite must run as root on Linux, with /proc and /sys/fs/cgroup mounted:
// it reads every process's /proc/<pid>/environ, and runtimes are expected
// to create their cgroups as /sys/fs/cgroup/<controller>/crucible/<pid>.<n>
// (cgroup v1) or /sys/fs/cgroup/crucible/<pid>.<n> (v2), where <pid> is the
// process calling Run (see Options.CgroupOwnerPID for a runtime whose
// sandboxes another process makes). It takes well under two minutes on two
// cores.
func Run(t *testing.T, newRuntime func(t *testing.T) sandbox.Runtime) {
	RunWith(t, newRuntime, Options{})
}

// Options adapt the suite to where a runtime's sandboxes live.
type Options struct {
	// CgroupOwnerPID is the pid of the process that makes the runs'
	// cgroups (named <pid>.<n>), when it is not the test process: for a
	// runtime that is a client of a Crucible server on this host, the
	// server's. The host checks then look for that process's cgroups; all
	// the others are unchanged. Zero means the test process.
	CgroupOwnerPID int
	// UIDBase and UIDCount are the host uids the runtime's sandboxes run
	// as, [UIDBase, UIDBase+UIDCount), if it documents a range: the host
	// checks then require every sandbox's uid in it. Zero skips the check
	// of the range (a sandbox's uid must still not be root, nor another
	// live sandbox's).
	UIDBase, UIDCount int
	// NotApplicable names the cases (by their subtest names, such as
	// "KernelView") that cannot apply to the runtime, each with the
	// reason: the suite skips them saying so. A case a runtime merely
	// fails is not one of them.
	NotApplicable map[string]string
	// Leftovers, if set, lists what of the runtime's runs exists outside
	// the processes, mounts and cgroups the host checks look at: for a
	// container runtime, the containers and volumes its runs created
	// (whose mounts the checks leave out, engine.go). Every host check
	// calls it once the run is over; each entry it returns is a leftover
	// and fails the test.
	Leftovers func() []string
	// UnnamedCalls are system calls the policy denies (EPERM) that the
	// runtime's seccomp filter cannot name, its seccomp library being
	// older than the calls, each with the reason. Such a call must still
	// be refused before it reaches the kernel; the suite then also takes
	// ENOSYS, what a filter answers for a number past the highest it
	// knows, for the refusal (a call that reached the kernel returns or
	// fails otherwise).
	UnnamedCalls map[string]string
	// WatchCreation, if set, starts watching for the sandboxes the
	// runtime creates and returns a function listing those created since
	// (each a description), and one ending the watch: for a runtime whose
	// sandboxes are not cgroups named as the native runtime's (a
	// container runtime's are the engine's). InputRejected then uses it,
	// instead of watching for cgroups, to prove a refused request created
	// nothing.
	WatchCreation func() (created func() []string, stop func())
	// FamilyRefusal, when set, is the errno (such as "EPERM") with which
	// the runtime's seccomp filter refuses the socket families and netlink
	// protocols the policy refuses, where it cannot answer the policy's
	// EAFNOSUPPORT or EPROTONOSUPPORT; FamilyRefusalWhy says why. The
	// refusal is still checked, family by family: only its errno differs.
	FamilyRefusal, FamilyRefusalWhy string
	// SampledCPUClock, when set, says why the CPU times a program reads
	// inside the runtime's sandbox are not the host's (a user-space
	// kernel that charges a task the time it was scheduled to run,
	// including the time the host gave another process meanwhile).
	// SessionIdleCPU then requires the cell after the idle time to be
	// billed at least half of what the spinners measured inside, not all:
	// a session running unaccounted is billed next to nothing either way.
	SampledCPUClock string
}

// RunWith is Run with options.
func RunWith(t *testing.T, newRuntime func(t *testing.T) sandbox.Runtime, opts Options) {
	s := &suite{owner: opts.CgroupOwnerPID, uidBase: opts.UIDBase, uidCount: opts.UIDCount, leftovers: opts.Leftovers, unnamed: opts.UnnamedCalls,
		watchCreation: opts.WatchCreation, familyRefusal: opts.FamilyRefusal, familyRefusalWhy: opts.FamilyRefusalWhy,
		sampledCPUClock: opts.SampledCPUClock != ""}
	if s.owner == 0 {
		s.owner = os.Getpid()
	}
	s.rt = newRuntime(t)
	if s.rt == nil {
		t.Fatal("newRuntime returned nil")
	}
	t.Cleanup(func() { s.finalCheck(t) })
	s.warmUp(t)

	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		// Hostile programs against the limits (limits.go).
		{"ForkBomb", testForkBomb},
		{"MemoryBomb", testMemoryBomb},
		{"WallTime", testWallTime},
		{"CPUTime", testCPUTime},
		{"EndlessOutput", testEndlessOutput},
		{"DiskFill", testDiskFill},
		// Hostile programs against the walls (escape.go).
		{"WriteOutside", testWriteOutside},
		{"ReadSecrets", testReadSecrets},
		{"Network", testNetwork},
		{"PrivilegedSyscalls", testPrivilegedSyscalls},
		{"SyscallSurvey", testSyscallSurvey},
		{"SocketFamilies", testSocketFamilies},
		{"KillHostProcess", testKillHostProcess},
		{"BackgroundSurvivors", testBackgroundSurvivors},
		{"SetuidBinaries", testSetuidBinaries},
		// Host descriptors the caller holds open (heldfds.go).
		{"InheritedDescriptors", testInheritedDescriptors},
		// Nothing of a run reaches the next (persist.go).
		{"NothingPersists", testNothingPersists},
		// What the kernel tells of the host (kernelview.go).
		{"KernelView", testKernelView},
		{"KernelViewPrograms", testKernelViewPrograms},
		// Kernel memory held for the program (socketmem.go).
		{"SocketMemory", testSocketMemory},
		// Ordinary programs (behaviour.go).
		{"ExitBeforeOutput", testExitBeforeOutput},
		{"BinaryStdin", testBinaryStdin},
		{"Unicode", testUnicode},
		{"Languages", testLanguages},
		{"InputFiles", testInputFiles},
		{"ReadOnlyInputs", testReadOnlyInputs},
		{"SessionReadOnlyInputs", testSessionReadOnlyInputs},
		{"Artifacts", testArtifacts},
		// Artifacts a hostile program shapes to cost the host (artifactcost.go).
		{"SparseArtifacts", testSparseArtifacts},
		{"SpecialFileArtifacts", testSpecialFileArtifacts},
		{"Env", testEnv},
		// /home/user leads to the working directory (homeuser.go).
		{"HomeUser", testHomeUser},
		// Output handed over while the program runs (output.go).
		{"OnOutput", testOnOutput},
		// Requests refused before anything runs (input.go).
		{"InputRejected", testInputRejected},
		{"NoLanguage", testNoLanguage},
		// Many runs, and runs cut short (concurrency.go).
		{"Concurrent", testConcurrent},
		{"Cancel", testCancel},
		// Per-user kernel quotas, per sandbox (quotas.go).
		{"PerSandboxQuotas", testPerSandboxQuotas},
		// Hostile cells against a session's machinery (session.go).
		{"SessionIdleCPU", testSessionIdleCPU},
		{"SessionForgedReply", testSessionForgedReply},
		{"SessionForgedOutput", testSessionForgedOutput},
		{"SessionBrokenChannel", testSessionBrokenChannel},
		// A cell out of memory restarts the interpreter (sessionrestart.go).
		{"SessionMemoryRestart", testSessionMemoryRestart},
		// Cells in named contexts of one session (sessioncontexts.go).
		{"SessionContexts", testSessionContexts},
		// A cell cancelled while it waits its turn (sessionqueue.go).
		{"SessionQueuedCancel", testSessionQueuedCancel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := opts.NotApplicable[tc.name]; ok {
				t.Skipf("not applicable to this runtime: %s", why)
			}
			tc.fn(t, s)
		})
	}
}

// suite is the state the subtests share.
type suite struct {
	rt sandbox.Runtime
	// owner is the pid in the names of the runs' cgroups.
	owner int
	// uidBase and uidCount are Options.UIDBase and UIDCount.
	uidBase, uidCount int
	// pooled is set when the runtime keeps sandboxes (and their cgroups)
	// alive between runs; the cgroup check then allows idle ones.
	pooled bool
	// leftovers is Options.Leftovers, or nil.
	leftovers func() []string
	// unnamed is Options.UnnamedCalls.
	unnamed map[string]string
	// watchCreation is Options.WatchCreation, or nil.
	watchCreation func() (func() []string, func())
	// familyRefusal and familyRefusalWhy are Options.FamilyRefusal and
	// FamilyRefusalWhy.
	familyRefusal, familyRefusalWhy string
	// sampledCPUClock is set when Options.SampledCPUClock is.
	sampledCPUClock bool

	mu     sync.Mutex
	tokens []string // every token a run was marked with
}

// warmUp checks that the runtime runs the simplest program at all, and
// finds out whether it keeps a pool of idle sandboxes (cgroups of the
// owner that hold processes while no run is in progress).
func (s *suite) warmUp(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	res, err := s.rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: `print("ready")`})
	if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "ready\n" {
		t.Fatalf("the runtime cannot run print(\"ready\"): err %v, status %s, reason %q, stdout %q, stderr %q",
			err, res.Status, res.Reason, res.Stdout, clip(res.Stderr))
	}
	// Let a pool, if any, refill: wait until every cgroup of the owner
	// holds a process (an idle sandbox) or none is left.
	var left []string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = nil
		for _, d := range runCgroups(s.owner) {
			if len(cgroupPids(d)) > 0 {
				s.pooled = true
			} else {
				left = append(left, d)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	switch {
	case len(left) > 0:
		t.Fatalf("after the first run, empty cgroups are left behind: %v", left)
	case s.pooled:
		t.Logf("the runtime keeps idle sandboxes between runs; cgroups holding unmarked processes are allowed")
	}
}

// finalCheck closes the runtime if it has a Close method, then checks that
// nothing of any run is left on the host. After Close, even a pooling
// runtime must have no cgroup left.
func (s *suite) finalCheck(t *testing.T) {
	closed := false
	if c, ok := s.rt.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		closed = true
	}
	s.mu.Lock()
	tokens := append([]string(nil), s.tokens...)
	s.mu.Unlock()
	if len(tokens) > 0 {
		for _, p := range findProcesses(tokens...) {
			t.Errorf("after the suite: process of a run still alive: %v", p)
		}
		for _, tok := range tokens {
			for _, p := range s.runProcesses(tok) {
				t.Errorf("after the suite: a run's %s still exists", p)
			}
		}
	}
	for _, l := range s.runtimeLeftovers() {
		t.Errorf("after the suite: %s", l)
	}
	if !closed {
		for _, d := range s.settledLeftovers(tokens) {
			t.Errorf("after the suite: cgroup left behind: %s", d)
		}
		return
	}
	left := runCgroups(s.owner)
	for i := 0; len(left) > 0 && i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		left = runCgroups(s.owner)
	}
	for _, d := range left {
		t.Errorf("after the suite and Close: cgroup left behind: %s (pids %v)", d, cgroupPids(d))
	}
}
