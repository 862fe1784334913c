package sandboxtest

import (
	"bytes"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// What the kernel tells a program about the host it runs on: boot
// arguments, the boot's identity, the host's memory, load, pressure and
// interrupts, how many cgroups (so how many sandboxes) exist, whose keys
// the kernel holds. None of it may be the host's.

// kernelViewRule is how a /proc path's content in the sandbox is judged
// against the host's own reading of it.
type kernelViewRule int

const (
	// noHostLine: the sandbox's copy (empty, or made up) shares no line
	// that carries a number with the host's.
	noHostLine kernelViewRule = iota
	// notHostText: the sandbox's copy is not the host's and does not
	// contain it (identifiers such as the boot arguments and boot id).
	notHostText
	// notHostField: the lines the host's copy starts with field (the first
	// word of a line) differ in the sandbox, or are absent.
	notHostField
	// notHostCount: the counter on the line starting with field is not
	// within what the host counted before and after the run (a host-wide
	// counter such as the number of forks since boot).
	notHostCount
	// emptyDir: the directory is absent or lists nothing.
	emptyDir
)

// kernelViewProbes are the paths a program reads, and how each is judged.
// Paths the host lacks are skipped.
var kernelViewProbes = []struct {
	path  string
	rule  kernelViewRule
	field string // for notHostField
}{
	{"/proc/cmdline", notHostText, ""},
	{"/proc/sys/kernel/random/boot_id", notHostText, ""},
	{"/proc/meminfo", notHostField, "MemTotal:"},
	{"/proc/stat", notHostCount, "processes"},
	// The first four fields (load and the host's thread count); the last
	// is the PID namespace's last pid, different anyway.
	{"/proc/loadavg", notHostField, ""},
	{"/proc/cgroups", noHostLine, ""},
	{"/proc/key-users", noHostLine, ""},
	{"/proc/keys", noHostLine, ""},
	{"/proc/interrupts", noHostLine, ""},
	{"/proc/softirqs", noHostLine, ""},
	{"/proc/vmstat", noHostLine, ""},
	{"/proc/zoneinfo", noHostLine, ""},
	{"/proc/buddyinfo", noHostLine, ""},
	{"/proc/pagetypeinfo", noHostLine, ""},
	{"/proc/diskstats", noHostLine, ""},
	{"/proc/partitions", noHostLine, ""},
	{"/proc/swaps", noHostLine, ""},
	{"/proc/timer_list", noHostLine, ""},
	{"/proc/sched_debug", noHostLine, ""},
	{"/proc/latency_stats", noHostLine, ""},
	{"/proc/pressure", emptyDir, ""},
	{"/proc/acpi", emptyDir, ""},
	{"/proc/scsi", emptyDir, ""},
	{"/proc/asound", emptyDir, ""},
	{"/proc/bus", emptyDir, ""},
	{"/proc/fs", emptyDir, ""},
	{"/proc/irq", emptyDir, ""},
}

// kernelViewProgram reads every path it is given and prints, as JSON, what
// it found: a file's text, a directory's entries, or the error.
const kernelViewProgram = `import json, os
out = {}
for p in {{PATHS}}:
    try:
        if os.path.isdir(p):
            out[p] = {"dir": sorted(os.listdir(p))}
        else:
            with open(p, "rb") as f:
                out[p] = {"text": f.read(1 << 20).decode("utf-8", "replace")}
    except OSError as e:
        out[p] = {"err": e.strerror}
print(json.dumps(out))
`

// kernelViewSeen is one path as the program reported it.
type kernelViewSeen struct {
	Text *string  `json:"text"`
	Dir  []string `json:"dir"`
	Err  string   `json:"err"`
}

func testKernelView(t *testing.T, s *suite) {
	var paths []string
	host := map[string][]string{} // each path's host copies, read before and after
	readHost := func() {
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				host[p] = append(host[p], string(b))
			}
		}
	}
	for _, pr := range kernelViewProbes {
		if _, err := os.Stat(pr.path); err == nil {
			paths = append(paths, pr.path)
		}
	}
	readHost()
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python,
		Code: program(kernelViewProgram, map[string]string{"PATHS": pyList(paths)})}, watch{token: newToken()})
	readHost()
	wantExit(t, res, sandbox.StatusOK, 0)
	var seen map[string]kernelViewSeen
	decodeReport(t, res, &seen)
	for _, pr := range kernelViewProbes {
		if !slices.Contains(paths, pr.path) {
			continue
		}
		got, ok := seen[pr.path]
		if !ok {
			t.Errorf("%s: missing from the program's report", pr.path)
			continue
		}
		if pr.rule == emptyDir {
			if len(got.Dir) > 0 {
				t.Errorf("%s lists the host's %v in the sandbox, want it absent or empty", pr.path, got.Dir)
			}
			continue
		}
		if got.Text == nil {
			t.Logf("%s: unreadable (%s)", pr.path, got.Err)
			continue
		}
		if pr.rule == notHostCount && len(host[pr.path]) == 2 {
			if n, lo, hi := fieldCount(*got.Text, pr.field), fieldCount(host[pr.path][0], pr.field), fieldCount(host[pr.path][1], pr.field); n > 0 && lo <= n && n <= hi {
				t.Errorf("%s shows the host's %s count %d (the host counted %d to %d over the run)", pr.path, pr.field, n, lo, hi)
			}
			continue
		}
		for _, h := range host[pr.path] {
			if leak := kernelViewLeak(pr.rule, pr.field, *got.Text, h); leak != "" {
				t.Errorf("%s shows the host's own content in the sandbox: %q", pr.path, clipString(leak))
				break
			}
		}
	}
}

// fieldCount returns the number after field on the line starting with
// it, or -1.
func fieldCount(text, field string) int64 {
	f := strings.Fields(fieldLine(text, field))
	if len(f) < 2 {
		return -1
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// kernelViewLeak returns what of host's copy sandbox's copy reveals under
// rule, or "" if nothing.
func kernelViewLeak(rule kernelViewRule, field, sandboxText, hostText string) string {
	switch rule {
	case notHostText:
		h := strings.TrimSpace(hostText)
		if h != "" && strings.Contains(sandboxText, h) {
			return h
		}
	case notHostField:
		want := fieldLine(hostText, field)
		if want != "" && fieldLine(sandboxText, field) == want {
			return want
		}
	case noHostLine:
		sb := map[string]bool{}
		for _, l := range strings.Split(sandboxText, "\n") {
			sb[strings.TrimSpace(l)] = true
		}
		for _, l := range strings.Split(hostText, "\n") {
			l = strings.TrimSpace(l)
			if len(l) >= 4 && strings.ContainsAny(l, "0123456789") && sb[l] {
				return l
			}
		}
	}
	return ""
}

// fieldLine returns the line of text starting with field, whitespace
// normalised; with field "" the first line's first four fields.
func fieldLine(text, field string) string {
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		switch {
		case field == "" && len(f) >= 4:
			return strings.Join(f[:4], " ")
		case field != "" && len(f) > 0 && f[0] == field:
			return strings.Join(f, " ")
		}
	}
	return ""
}

func clipString(s string) string { return clip([]byte(s)) }

// kernelViewCompat is a program per language that uses what programs
// learn from /proc (processor count, memory, load), each printing "ok"
// and what it saw.
var kernelViewCompat = []struct {
	name string
	lang sandbox.Language
	code string
}{
	{"python", sandbox.Python, `import json, multiprocessing, os
with multiprocessing.Pool(2) as p:
    squares = p.map(abs, [-1, -2, -3])
assert squares == [1, 2, 3], squares
load = os.getloadavg()
assert len(load) == 3
pages = os.sysconf("SC_PHYS_PAGES")
assert pages > 0
print("ok", json.dumps({"cpus": os.cpu_count(), "mp": multiprocessing.cpu_count()}))
`},
	{"javascript", sandbox.JavaScript, `const os = require("os");
if (!(os.totalmem() > 0)) throw new Error("totalmem " + os.totalmem());
if (!(os.freemem() >= 0)) throw new Error("freemem " + os.freemem());
if (os.loadavg().length !== 3) throw new Error("loadavg " + os.loadavg());
console.log("ok", JSON.stringify({cpus: os.cpus().length}));
`},
	{"bash", sandbox.Bash, `set -e
n=$(nproc)
read -r l1 l5 l15 rest < /proc/loadavg
grep -q '^MemTotal:' /proc/meminfo
grep -q '^cpu ' /proc/stat
if command -v free >/dev/null; then free -b >/dev/null; fi
if command -v ps >/dev/null; then ps -e >/dev/null; fi
echo ok "{\"cpus\": $n}"
`},
}

func testKernelViewPrograms(t *testing.T, s *suite) {
	for _, tc := range kernelViewCompat {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := s.run(t, sandbox.Request{Language: tc.lang, Code: tc.code}, watch{token: newToken()})
			wantExit(t, res, sandbox.StatusOK, 0)
			out := strings.TrimSpace(string(res.Stdout))
			if !strings.HasPrefix(out, "ok ") {
				t.Fatalf("stdout = %q, want ok and a report (stderr %q)", out, clip(res.Stderr))
			}
			var rep struct {
				CPUs int `json:"cpus"`
				MP   int `json:"mp"`
			}
			res.Stdout = bytes.TrimPrefix(res.Stdout, []byte("ok "))
			decodeReport(t, res, &rep)
			// The sandbox may use every processor the host lets it run
			// on; programs sizing their workers must see them.
			if rep.CPUs != runtime.NumCPU() {
				t.Errorf("the program counts %d processors, the host gives it %d", rep.CPUs, runtime.NumCPU())
			}
			if tc.lang == sandbox.Python && rep.MP != rep.CPUs {
				t.Errorf("multiprocessing.cpu_count() = %d, os.cpu_count() = %d", rep.MP, rep.CPUs)
			}
		})
	}
}
