package linux_test

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// TestWarmStartupState proves a warm run sees what a cold one sees of the
// state fixed when its sandbox and interpreter start: variables the
// interpreter reads only at its start (PYTHONPATH) make the run cold, as
// a warm interpreter cannot honour them; /proc/meminfo shows the run's
// memory limit; read-only input files are root's, mode 0444 and
// immutable, placed by the host in a warm sandbox as init places them in
// a cold one.
func TestWarmStartupState(t *testing.T) {
	const lsattr = "import os, fcntl, struct\n" +
		"def flags(p):\n    fd = os.open(p, os.O_RDONLY)\n    try:\n        return struct.unpack('i', fcntl.ioctl(fd, 0x80086601, b'\\0' * 4))[0] & 0x10\n" +
		"    finally:\n        os.close(fd)\n" +
		"for p in ('data/in.csv', 'data', 'mine.txt'):\n    st = os.stat(p)\n    print(p, oct(st.st_mode & 0o7777), st.st_uid == 0, flags(p))\n"
	cases := []struct {
		name   string
		req    sandbox.Request
		stdout string
		warm   bool
	}{
		{"PYTHONPATH", sandbox.Request{Language: sandbox.Python, Code: "import m\nprint(m.V)",
			Env:   map[string]string{"PYTHONPATH": "/work/lib"},
			Files: []sandbox.File{{Name: "lib/m.py", Content: []byte("V = 7\n")}}}, "7\n", false},
		{"meminfo", sandbox.Request{Language: sandbox.Python, Code: "print(open('/proc/meminfo').readline().split()[1])",
			Limits: sandbox.Limits{MemoryBytes: 128 * sandbox.MiB}}, "131072\n", true},
		{"read-only files", sandbox.Request{Language: sandbox.Python, Code: lsattr, Files: []sandbox.File{
			{Name: "data/in.csv", Content: []byte("a\n1\n"), ReadOnly: true}, {Name: "mine.txt", Content: []byte("x")}}},
			"data/in.csv 0o444 True 16\ndata 0o755 True 16\nmine.txt 0o644 False 0\n", true},
		{"plain env", sandbox.Request{Language: sandbox.Python, Code: "import os\nprint(os.environ['GREETING'])",
			Env: map[string]string{"GREETING": "hi"}}, "hi\n", true},
	}
	cold := newRuntime(t, linux.Options{})
	warm := newRuntime(t, linux.Options{Warm: 1})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c := runProgram(t, cold, tc.req); c.Status != sandbox.StatusOK || string(c.Stdout) != tc.stdout {
				t.Errorf("cold run: %s, want stdout %q", describe(c), tc.stdout)
			}
			awaitWarm(t, warm)
			before := warm.WarmStats()
			w := runProgram(t, warm, tc.req)
			if w.Status != sandbox.StatusOK || string(w.Stdout) != tc.stdout {
				t.Errorf("warm runtime: %s, want stdout %q", describe(w), tc.stdout)
			}
			if hit := warm.WarmStats().Hits > before.Hits; hit != tc.warm {
				t.Errorf("served warm: %v, want %v", hit, tc.warm)
			}
		})
	}
}
