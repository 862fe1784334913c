package linux_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/sandbox/sandboxtest"
)

// The tests in this file check the warm pool: Python sandboxes whose
// interpreter is already running, each serving one stateless run. A warm
// run must be indistinguishable from a cold one, and must inherit nothing
// from the runs before it.

// awaitWarm waits until rt's warm pool is full again.
func awaitWarm(tb testing.TB, rt *linux.Runtime) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for st := rt.WarmStats(); st.Ready < st.Size; st = rt.WarmStats() {
		if time.Now().After(deadline) {
			tb.Fatalf("the warm pool did not fill within 2 minutes: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runProgram runs req on rt and fails tb if Run returns an error.
func runProgram(tb testing.TB, rt *linux.Runtime, req sandbox.Request) sandbox.Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := rt.Run(ctx, req)
	if err != nil {
		tb.Fatalf("Run(%q): %v (%s)", req.Code, err, describe(res))
	}
	return res
}

// leftovers is what a warm run reports about the state it found.
type leftovers struct {
	Work    []string `json:"work"`    // entries of /work
	Tmp     []string `json:"tmp"`     // entries of /tmp
	Global  bool     `json:"global"`  // a global of __main__ named left
	Builtin bool     `json:"builtin"` // builtins.left
	Module  bool     `json:"module"`  // json.left, in a module the kernel itself imports
	Env     bool     `json:"env"`     // $LEFT
	Procs   []string `json:"procs"`   // processes whose command line holds the token
}

// TestWarmNothingPersists proves that nothing of a stateless run reaches
// the next run from the warm pool: run A leaves files in /work and /tmp,
// globals, a module attribute, an environment variable and a detached
// background process; the following warm runs (one from a sandbox started
// before A, one started after it) see none of it, and the host sees A's
// process gone as soon as A's Run returns.
func TestWarmNothingPersists(t *testing.T) {
	for _, tc := range []struct {
		name  string
		image bool
	}{
		{"host", false},
		{"image", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, seed := linux.Options{Warm: 2}, []string{}
			if tc.image {
				img := testenv.Image(t, "datascience")
				opts = imageOptions(img)
				opts.Warm = 2
				if img.Manifest.TmpSeed != "" {
					entries, err := os.ReadDir(filepath.Join(img.RootFS, img.Manifest.TmpSeed))
					if err != nil {
						t.Fatalf("read the image's /tmp seed: %v", err)
					}
					for _, e := range entries {
						seed = append(seed, e.Name())
					}
				}
			}
			rt := newRuntime(t, opts)
			token := uniqueToken()
			awaitWarm(t, rt)
			hits := rt.WarmStats().Hits

			plant := fmt.Sprintf(`import builtins, json, os, subprocess, time
token = %q
open('/work/left.txt', 'w').write(token)
open('/tmp/left.txt', 'w').write(token)
left = token
builtins.left = token
json.left = token
os.environ['LEFT'] = token
subprocess.Popen([token, '1000'], executable='sleep', start_new_session=True)
time.sleep(0.3)
print('planted')`, token)
			sp := spot(token, false)
			res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: plant})
			_, seen := sp.result()
			if res.Status != sandbox.StatusOK || string(res.Stdout) != "planted\n" {
				t.Fatalf("run A: %s", describe(res))
			}
			if !seen {
				t.Fatalf("positive control: run A's background process was never seen on the host")
			}
			if left := procsWith(token, false); len(left) > 0 {
				t.Errorf("after run A returned, its background processes %v are alive on the host", left)
			}

			check := fmt.Sprintf(`import builtins, json, os
token = %q
`+pyProcsWithToken+`print(json.dumps({'work': sorted(os.listdir('/work')), 'tmp': sorted(os.listdir('/tmp')),
    'global': 'left' in globals(), 'builtin': hasattr(builtins, 'left'),
    'module': hasattr(json, 'left'), 'env': 'LEFT' in os.environ, 'procs': procs}))`, token)
			want := leftovers{Work: []string{}, Tmp: seed, Procs: []string{}}
			slices.Sort(want.Tmp)
			for i := range opts.Warm {
				awaitWarm(t, rt)
				res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: check})
				var got leftovers
				if err := json.Unmarshal(res.Stdout, &got); err != nil {
					t.Fatalf("run B%d: %v in %s", i+1, err, describe(res))
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("run B%d found %+v, want %+v", i+1, got, want)
				}
			}
			if got := rt.WarmStats().Hits - hits; got != uint64(1+opts.Warm) {
				t.Errorf("%d of the %d runs were warm, want all", got, 1+opts.Warm)
			}
		})
	}
}

// outcome is what a cold and a warm run of the same program must share.
type outcome struct {
	Status    sandbox.Status
	Exit      int
	Signal    string
	Stdout    string
	Error     string // type:line:column of the structured error
	Artifacts string // name=content, in name order
}

func outcomeOf(res sandbox.Result) outcome {
	o := outcome{Status: res.Status, Exit: res.ExitCode, Signal: res.Signal, Stdout: string(res.Stdout)}
	if e := res.Error; e != nil {
		o.Error = fmt.Sprintf("%s:%d:%d", e.Type, e.Line, e.Column)
	}
	var arts []string
	for _, a := range res.Artifacts {
		arts = append(arts, a.Name+"="+string(a.Content))
	}
	o.Artifacts = strings.Join(arts, ",")
	return o
}

// TestWarmMatchesCold proves a run from the warm pool gives the same
// Result as one in a freshly built sandbox (status, exit code, signal,
// output, structured error with its line and column, artifacts) for
// ordinary programs, for each limit, for what a script can observe of how
// it was started (its file, its globals, how an uncaught exception ends
// it) and for what the interpreter's shutdown does (flush and close the
// files left open, run finalizers); and that every one of them was indeed
// served warm.
func TestWarmMatchesCold(t *testing.T) {
	py := func(code string) sandbox.Request { return sandbox.Request{Language: sandbox.Python, Code: code} }
	const ownFile = "import os\nprint(os.listdir('/code'), len(open(__file__).read()))"
	ok := func(stdout string) outcome { return outcome{Status: sandbox.StatusOK, Stdout: stdout} }
	ended := func(status sandbox.Status, signal string) outcome {
		return outcome{Status: status, Exit: -1, Signal: signal}
	}
	cases := []struct {
		name string
		req  sandbox.Request
		want outcome
	}{
		{"print", py("print('hello')"), ok("hello\n")},
		{"sys.exit(3)", py("import sys\nprint('bye')\nsys.exit(3)"), outcome{Status: sandbox.StatusError, Exit: 3, Stdout: "bye\n"}},
		{"NameError", py("x = 1\nprint(x)\nprint(y)"), outcome{Status: sandbox.StatusError, Exit: 1, Stdout: "1\n", Error: "NameError:3:0"}},
		{"SyntaxError", py("x = 1\ny = = 2"), outcome{Status: sandbox.StatusError, Exit: 1, Error: "SyntaxError:2:5"}},
		{"__main__", py("import sys\nprint(__name__, sys.argv, __file__)"), ok("__main__ ['/code/main.py'] /code/main.py\n")},
		{"stdin echo", sandbox.Request{Language: sandbox.Python, Code: "import sys\nsys.stdout.write(sys.stdin.read())", Stdin: []byte("line 1\nline 2\n")},
			ok("line 1\nline 2\n")},
		{"env", sandbox.Request{Language: sandbox.Python, Code: "import os\nprint(os.environ['GREETING'], os.environ['HOME'])", Env: map[string]string{"GREETING": "hi"}},
			ok("hi /tmp\n")},
		{"input files", sandbox.Request{Language: sandbox.Python, Code: "import helper\nprint(open('data.txt').read(), helper.VALUE)",
			Files: []sandbox.File{{Name: "data.txt", Content: []byte("input")}, {Name: "helper.py", Content: []byte("VALUE = 42\n")}}},
			ok("input 42\n")},
		{"artifact", py("import os\nos.makedirs('out')\nopen('out/result.txt', 'w').write('done')"), outcome{Status: sandbox.StatusOK, Artifacts: "out/result.txt=done"}},
		{"CPU limit", sandbox.Request{Language: sandbox.Python, Code: "while True:\n    pass", Limits: sandbox.Limits{CPUTimeMS: 500}},
			ended(sandbox.StatusCPULimit, "SIGKILL")},
		{"memory bomb", sandbox.Request{Language: sandbox.Python, Code: "chunks = []\nwhile True:\n    chunks.append(b'x' * (1 << 20))", Limits: sandbox.Limits{MemoryBytes: 64 * sandbox.MiB}},
			ended(sandbox.StatusMemoryLimit, "SIGKILL")},
		{"SIGKILL itself", py("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"), ended(sandbox.StatusKilled, "SIGKILL")},
		// What a script can observe of how it was started.
		{"reads its own file", py(ownFile), ok(fmt.Sprintf("['main.py'] %d\n", len(ownFile)))},
		{"module globals", py("print(sorted(globals()))"),
			ok("['__annotations__', '__builtins__', '__cached__', '__doc__', '__file__', '__loader__', '__name__', '__package__', '__spec__']\n")},
		{"uncaught KeyboardInterrupt", py("raise KeyboardInterrupt"), ended(sandbox.StatusKilled, "SIGINT")},
		{"sys.excepthook", py("import sys\nsys.excepthook = lambda kind, value, tb: print('hook', kind.__name__)\nraise ValueError"),
			outcome{Status: sandbox.StatusError, Exit: 1, Stdout: "hook ValueError\n"}},
		// Python runs unbuffered (lang's PYTHONUNBUFFERED=1): the print fails.
		{"stdout closed", py("import os\nos.close(1)\nprint('lost')"), outcome{Status: sandbox.StatusError, Exit: 1, Error: "OSError:3:0"}},
		// Buffered, as a request may ask: the flush at exit fails.
		{"stdout unflushable at exit", sandbox.Request{Language: sandbox.Python, Code: "import os\nos.close(1)\nprint('lost')", Env: map[string]string{"PYTHONUNBUFFERED": ""}},
			outcome{Status: sandbox.StatusError, Exit: 120}},
		// What the interpreter's shutdown does for a script.
		{"file left open", py("f = open('out.txt', 'w')\nf.write('data')"), outcome{Status: sandbox.StatusOK, Artifacts: "out.txt=data"}},
		{"finalizer at exit", py("class C:\n    def __del__(self):\n        print('finalized')\n\nc = C()"), ok("finalized\n")},
		{"atexit handler", py("import atexit\natexit.register(print, 'at exit')\nprint('main')"), ok("main\nat exit\n")},
		{"buffered output flushed at exit", sandbox.Request{Language: sandbox.Python, Code: "import sys\nsys.stdout.write('unflushed')",
			Env: map[string]string{"PYTHONUNBUFFERED": ""}}, ok("unflushed")},
		{"thread joined at exit", py("import threading, time\ndef late():\n    time.sleep(0.2)\n    print('thread done')\n" +
			"threading.Thread(target=late).start()\nprint('main done')"), ok("main done\nthread done\n")},
	}
	cold := newRuntime(t, linux.Options{})
	warm := newRuntime(t, linux.Options{Warm: 1})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := runProgram(t, cold, tc.req)
			awaitWarm(t, warm)
			w := runProgram(t, warm, tc.req)
			if got := outcomeOf(c); got != tc.want {
				t.Errorf("cold run:\n got %+v\nwant %+v\n(%s)", got, tc.want, describe(c))
			}
			if got := outcomeOf(w); got != tc.want {
				t.Errorf("warm run:\n got %+v\nwant %+v\n(%s)", got, tc.want, describe(w))
			}
		})
	}
	if st := warm.WarmStats(); st.Hits != uint64(len(cases)) {
		t.Errorf("%d of the %d runs were served warm (%+v), want all", st.Hits, len(cases), st)
	}
}

// TestWarmUnservable proves a request a warm sandbox cannot honour (another
// disk size, more open files than its interpreter started with) runs in a
// sandbox built for it, with its limits in force, and does not take the
// warm one; while a request it can honour (fewer open files) is served
// warm with the lower limit applied.
func TestWarmUnservable(t *testing.T) {
	rt := newRuntime(t, linux.Options{Warm: 1})
	report := "import os, resource\nst = os.statvfs('/work')\nprint(st.f_blocks * st.f_frsize, resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
	def := sandbox.DefaultLimits()
	for _, tc := range []struct {
		name string
		lim  sandbox.Limits
		warm bool
	}{
		{"smaller disk", sandbox.Limits{DiskBytes: 32 * sandbox.MiB}, false},
		{"larger disk", sandbox.Limits{DiskBytes: 128 * sandbox.MiB}, false},
		{"more open files", sandbox.Limits{OpenFiles: 4 * def.OpenFiles}, false},
		{"fewer open files", sandbox.Limits{OpenFiles: 64}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			awaitWarm(t, rt)
			before := rt.WarmStats()
			res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: report, Limits: tc.lim})
			lim := tc.lim.WithDefaults()
			if want := fmt.Sprintf("%d %d\n", lim.DiskBytes, lim.OpenFiles); res.Status != sandbox.StatusOK || string(res.Stdout) != want {
				t.Errorf("got %s, want stdout %q (disk size, open files)", describe(res), want)
			}
			after := rt.WarmStats()
			if hit := after.Hits > before.Hits; hit != tc.warm {
				t.Errorf("served warm: %v, want %v (stats before %+v, after %+v)", hit, tc.warm, before, after)
			}
			if !tc.warm && after.Ready != after.Size {
				t.Errorf("a cold run took the warm sandbox: %+v", after)
			}
		})
	}
}

// warmFirst is a runtime whose every run first waits (within its context,
// at most a few seconds) until the warm pool is full, so that each run the
// pool can serve is served warm.
type warmFirst struct{ *linux.Runtime }

func (w warmFirst) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	deadline := time.Now().Add(5 * time.Second)
	for st := w.WarmStats(); st.Ready < st.Size && ctx.Err() == nil && time.Now().Before(deadline); st = w.WarmStats() {
		time.Sleep(5 * time.Millisecond)
	}
	return w.Runtime.Run(ctx, req)
}

// TestConformanceWarm runs the conformance suite against a runtime that
// serves Python runs from a warm pool: every hostile program and limit
// must be handled by a warm sandbox as by a fresh one. "as is" calls the
// runtime as the suite does, runs back to back, so the pool is often empty
// and runs warm and cold mix while it refills; "pool full" waits for the
// pool before each run, so that every run it can serve is served warm.
// Each fails if no run was served warm.
func TestConformanceWarm(t *testing.T) {
	testenv.Root(t)
	for _, tc := range []struct {
		name string
		wrap func(*linux.Runtime) sandbox.Runtime
	}{
		{"as is", func(rt *linux.Runtime) sandbox.Runtime { return rt }},
		{"pool full", func(rt *linux.Runtime) sandbox.Runtime { return warmFirst{rt} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sandboxtest.RunWith(t, func(t *testing.T) sandbox.Runtime {
				rt, err := linux.New(linux.Options{Warm: 2})
				if err != nil {
					t.Fatalf("linux.New: %v", err)
				}
				// Registered before the suite's own cleanup, so it runs
				// after the suite has closed the runtime and checked the host.
				t.Cleanup(func() {
					st := rt.WarmStats()
					t.Logf("warm pool over the suite: %d hits, %d misses", st.Hits, st.Misses)
					if st.Hits == 0 {
						t.Errorf("no run of the suite was served by a warm sandbox")
					}
				})
				return tc.wrap(rt)
			}, defaultUIDs)
		})
	}
}

// TestRuntimesShareNoCgroup proves two runtimes in one process give their
// sandboxes cgroups of their own: with a counter per runtime, both first
// sandboxes were named <pid>.1, and the first to end removed the cgroup
// the other was still running in.
func TestRuntimesShareNoCgroup(t *testing.T) {
	a, b := newRuntime(t, linux.Options{Warm: 1}), newRuntime(t, linux.Options{Warm: 1})
	awaitWarm(t, a)
	awaitWarm(t, b)
	names := map[string]bool{}
	for _, dir := range ownCgroups() {
		names[filepath.Base(dir)] = true
	}
	if len(names) < 2 {
		t.Fatalf("two runtimes' warm sandboxes are in %d cgroup(s) %v, want one each", len(names), slices.Sorted(maps.Keys(names)))
	}
	for _, rt := range []*linux.Runtime{a, b} {
		if res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: "print(1)"}); res.Status != sandbox.StatusOK {
			t.Errorf("run: %s", describe(res))
		}
	}
}

// TestWarmProcessLimit proves that limits.processes holds for a run served
// warm as for a cold one. A warm interpreter may already have threads of
// its own (numpy's math library starts some as it is imported), and they
// count as the program's: a run allowed fewer processes and threads than
// the interpreter already has must run cold. In the data-science image,
// on a machine with more than one core, processes 1 is such a run.
func TestWarmProcessLimit(t *testing.T) {
	opts := imageOptions(testenv.Image(t, "datascience"))
	opts.Warm = 1
	rt := newRuntime(t, opts)
	// The tasks of every process but init (pid 1, outside the run's count).
	code := "import os\nn = 0\nfor p in os.listdir('/proc'):\n    if p.isdigit() and p != '1':\n" +
		"        n += len(os.listdir(f'/proc/{p}/task'))\nprint(n)"
	for _, processes := range []int64{64, 2, 1} {
		t.Run(fmt.Sprint(processes), func(t *testing.T) {
			awaitWarm(t, rt)
			before := rt.WarmStats()
			res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python, Code: code, Limits: sandbox.Limits{Processes: processes}})
			n, err := strconv.ParseInt(strings.TrimSpace(string(res.Stdout)), 10, 64)
			if res.Status != sandbox.StatusOK || err != nil {
				t.Fatalf("want a count of tasks, got %s", describe(res))
			}
			warm := rt.WarmStats().Hits > before.Hits
			t.Logf("served warm: %v; the program had %d processes and threads", warm, n)
			if n > processes {
				t.Errorf("the program had %d processes and threads under limits.processes = %d (served warm: %v)", n, processes, warm)
			}
			if processes == 64 && !warm {
				t.Errorf("a run with the default limits was not served warm: %+v", rt.WarmStats())
			}
		})
	}
}
