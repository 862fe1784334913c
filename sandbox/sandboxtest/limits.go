package sandboxtest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Hostile programs that try to exhaust a resource. Each must end with the
// status of the limit it hits, and nothing of it may outlive the run.

// setComm is Python that renames the process (and every process it forks
// from then on) to the token, so that the host can find a fork bomb's
// children, which have no argv of their own.
const setComm = `import ctypes
ctypes.CDLL(None).prctl(15, b"{{TOKEN}}", 0, 0, 0)  # PR_SET_NAME, inherited by fork
`

func testForkBomb(t *testing.T, s *suite) {
	// Both bombs run until the wall-time limit: the pids limit makes fork
	// fail, but neither bomb gives up, so the run must end by timeout.
	// The CPU limit is far above what two cores can burn in 3 s, so it
	// cannot fire first.
	lim := sandbox.Limits{WallTimeMS: 3000, CPUTimeMS: 60_000, Processes: 32, MemoryBytes: 512 * sandbox.MiB}
	t.Run("python", func(t *testing.T) {
		tok := newToken()
		code := program(setComm+`import errno, os
main = os.getpid()
told = False
while True:
    try:
        os.fork()
    except OSError as e:
        # Only the original process reports, once: proof the pids limit bit.
        if os.getpid() == main and not told:
            print("fork failed:", errno.errorcode[e.errno], flush=True)
            told = True
`, map[string]string{"TOKEN": tok})
		var most int
		res, elapsed := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code, Limits: lim},
			watch{token: tok, expectSeen: true, maxSeen: &most})
		wantStatus(t, res, sandbox.StatusTimeout)
		if got := string(res.Stdout); got != "fork failed: EAGAIN\n" {
			t.Errorf("stdout = %q, want the main process to report one failed fork (EAGAIN): the pids limit did not bite", got)
		}
		// This bomb's processes never exit, so the host's count is exact:
		// limits.processes caps the program's processes, init aside.
		if most > int(lim.Processes) {
			t.Errorf("the host saw %d processes of the bomb alive at once, above limits.processes = %d", most, lim.Processes)
		}
		checkPromptEnd(t, elapsed, lim.WallTime())
	})
	t.Run("bash", func(t *testing.T) {
		tok := newToken()
		// exec -a puts the token in argv[0] of the shell that runs the
		// bomb; every fork of it shares that command line. The shell
		// then spins with builtins only, so it needs no fork to go on.
		code := program(`exec -a {{TOKEN}} /bin/bash -c ':(){ :|:& };:; while :; do :; done'
`, map[string]string{"TOKEN": tok})
		res, elapsed := s.run(t, sandbox.Request{Language: sandbox.Bash, Code: code, Limits: lim},
			watch{token: tok, expectSeen: true})
		wantStatus(t, res, sandbox.StatusTimeout)
		if !bytes.Contains(res.Stderr, []byte("Resource temporarily unavailable")) {
			t.Errorf("stderr holds no failed fork (%q): the pids limit did not bite", clip(res.Stderr))
		}
		checkPromptEnd(t, elapsed, lim.WallTime())
	})
}

// checkPromptEnd fails t if a run stopped by a limit took much longer than
// the limit.
func checkPromptEnd(t *testing.T, elapsed, limit time.Duration) {
	t.Helper()
	if elapsed > limit+3*time.Second {
		t.Errorf("Run took %s, more than 3s past its %s limit", elapsed, limit)
	}
}

func testMemoryBomb(t *testing.T, s *suite) {
	tok := newToken()
	code := program(setComm+`b = bytearray(1 << 30)  # 1 GiB, zero pages not yet touched
for i in range(0, len(b), 4096):
    b[i] = 1  # touch every page
print("survived")
`, map[string]string{"TOKEN": tok})
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code,
		Limits: sandbox.Limits{MemoryBytes: 64 * sandbox.MiB, WallTimeMS: 20_000, CPUTimeMS: 20_000}},
		watch{token: tok})
	wantStatus(t, res, sandbox.StatusMemoryLimit)
	if bytes.Contains(res.Stdout, []byte("survived")) {
		t.Errorf("the program touched 1 GiB under a 64 MiB limit")
	}
	if res.Metrics.PeakMemoryBytes > 80*sandbox.MiB {
		t.Errorf("peak memory %d bytes, far above the 64 MiB limit", res.Metrics.PeakMemoryBytes)
	}
}

func testWallTime(t *testing.T, s *suite) {
	for _, tc := range []struct{ name, code string }{
		{"busy loop", "while True:\n    pass\n"},
		{"sleep", "import time\ntime.sleep(60)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := newToken()
			lim := sandbox.Limits{WallTimeMS: 1000, CPUTimeMS: 10_000}
			res, elapsed := s.run(t, sandbox.Request{Language: sandbox.Python, Code: tc.code, Limits: lim}, watch{token: tok})
			wantStatus(t, res, sandbox.StatusTimeout)
			checkPromptEnd(t, elapsed, lim.WallTime())
			if res.Metrics.WallMS < 900 {
				t.Errorf("metrics.wall_ms = %.0f, want about 1000", res.Metrics.WallMS)
			}
		})
	}
}

func testCPUTime(t *testing.T, s *suite) {
	t.Run("one process", func(t *testing.T) {
		tok := newToken()
		lim := sandbox.Limits{CPUTimeMS: 500, WallTimeMS: 10_000}
		res, elapsed := s.run(t, sandbox.Request{Language: sandbox.Python, Code: "while True:\n    pass\n", Limits: lim},
			watch{token: tok})
		wantStatus(t, res, sandbox.StatusCPULimit)
		if elapsed > 5*time.Second {
			t.Errorf("Run took %s: the 500ms CPU limit was not enforced promptly", elapsed)
		}
	})
	t.Run("four processes", func(t *testing.T) {
		// Each process alone stays under the limit for a while; only
		// their sum exceeds it. The per-process RLIMIT_CPU cannot catch
		// this, the run's total must.
		tok := newToken()
		code := program(setComm+`import os, time
for _ in range(3):
    if os.fork() == 0:
        break
end = time.time() + 60
while time.time() < end:
    pass
`, map[string]string{"TOKEN": tok})
		lim := sandbox.Limits{CPUTimeMS: 1000, WallTimeMS: 10_000}
		res, elapsed := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code, Limits: lim},
			watch{token: tok, expectSeen: true})
		wantStatus(t, res, sandbox.StatusCPULimit)
		if elapsed > 5*time.Second {
			t.Errorf("Run took %s: 1s of CPU over four spinning processes was not caught promptly", elapsed)
		}
	})
}

func testEndlessOutput(t *testing.T, s *suite) {
	const limit = 64 * sandbox.KiB
	t.Run("stdout", func(t *testing.T) {
		tok := newToken()
		res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: "while True:\n    print('x' * 1000)\n",
			Limits: sandbox.Limits{OutputBytes: limit, WallTimeMS: 10_000}}, watch{token: tok})
		wantStatus(t, res, sandbox.StatusOutputLimit)
		want := strings.Repeat(strings.Repeat("x", 1000)+"\n", int(limit)/1001+1)[:limit]
		if len(res.Stdout) != int(limit) {
			t.Errorf("len(stdout) = %d, want exactly the limit %d", len(res.Stdout), limit)
		} else if string(res.Stdout) != want {
			t.Errorf("stdout is not the first %d bytes the program wrote", limit)
		}
		if !res.StdoutTruncated {
			t.Errorf("stdout_truncated = false, want true")
		}
		if len(res.Stderr) != 0 || res.StderrTruncated {
			t.Errorf("stderr = %q (truncated %v), want empty", clip(res.Stderr), res.StderrTruncated)
		}
	})
	t.Run("stdout and stderr", func(t *testing.T) {
		tok := newToken()
		code := "import sys\nwhile True:\n    sys.stdout.write('o' * 1000 + '\\n')\n    sys.stderr.write('e' * 1000 + '\\n')\n"
		res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code,
			Limits: sandbox.Limits{OutputBytes: limit, WallTimeMS: 10_000}}, watch{token: tok})
		wantStatus(t, res, sandbox.StatusOutputLimit)
		if n := len(res.Stdout) + len(res.Stderr); n != int(limit) {
			t.Errorf("len(stdout)+len(stderr) = %d+%d = %d, want exactly the shared limit %d",
				len(res.Stdout), len(res.Stderr), n, limit)
		}
		if !res.StdoutTruncated && !res.StderrTruncated {
			t.Errorf("neither stream is marked truncated")
		}
		if strings.Trim(string(res.Stdout), "o\n") != "" || strings.Trim(string(res.Stderr), "e\n") != "" {
			t.Errorf("the streams are mixed up")
		}
	})
}

func testDiskFill(t *testing.T, s *suite) {
	// The working tmpfs is 1 MiB. The program sees the failed write
	// (ENOSPC when the tmpfs is full, EFBIG when one file reaches
	// RLIMIT_FSIZE, which defaults to the disk size), reports it and
	// re-raises it: an uncaught OSError, so status error, exit 1.
	const disk = 1 * sandbox.MiB
	for _, tc := range []struct{ name, code string }{
		{"many files", `import errno, json, os
n = 0
try:
    for i in range(1000):
        fd = os.open(f"/work/fill-{{TOKEN}}-{i}", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for _ in range(64):
                n += os.write(fd, b"x" * 4096)
        finally:
            os.close(fd)
except OSError as e:
    print(json.dumps({"errno": errno.errorcode[e.errno], "written": n}), flush=True)
    raise
`},
		{"one file in /tmp", `import errno, json, os
n = 0
fd = os.open("/tmp/fill-{{TOKEN}}", os.O_WRONLY | os.O_CREAT, 0o600)
try:
    while True:
        n += os.write(fd, b"x" * 65536)
except OSError as e:
    print(json.dumps({"errno": errno.errorcode[e.errno], "written": n}), flush=True)
    raise
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := newToken()
			code := program(tc.code, map[string]string{"TOKEN": tok})
			res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code,
				Limits: sandbox.Limits{DiskBytes: disk, WallTimeMS: 10_000}},
				watch{token: tok, paths: []string{"/work/fill-" + tok + "-0", "/tmp/fill-" + tok}})
			wantExit(t, res, sandbox.StatusError, 1)
			var rep struct {
				Errno   string `json:"errno"`
				Written int64  `json:"written"`
			}
			decodeReport(t, res, &rep)
			if rep.Errno != "ENOSPC" && rep.Errno != "EFBIG" {
				t.Errorf("the write failed with %s, want ENOSPC or EFBIG", rep.Errno)
			}
			if rep.Written > disk || rep.Written < disk/2 {
				t.Errorf("wrote %d bytes before the error, want about the disk limit %d and never more", rep.Written, disk)
			}
			if res.Error == nil || res.Error.Type != "OSError" {
				t.Errorf("error = %+v, want type OSError", res.Error)
			}
		})
	}
}
