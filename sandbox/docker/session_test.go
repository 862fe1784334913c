package docker_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// TestSessionCells runs a session of several cells through each runtime:
// variables persist from one cell to the next, the last expression is the
// value, output is the cell's own, an exception is the cell's error, files
// written by a cell are read back by the host and the other way round.
func TestSessionCells(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			rt := newRuntime(t, r.oci)
			defer rt.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			ses, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python,
				Files: []sandbox.File{{Name: "in/data.txt", Content: sandbox.Data("given")}}})
			if err != nil {
				t.Fatalf("NewSession: %v", err)
			}
			defer ses.Close()
			t.Logf("session started in %s", time.Since(start).Round(time.Millisecond))
			for _, tc := range []struct {
				code, value, stdout string
				status              sandbox.Status
				artifacts           string
			}{
				{"x = 41\nprint('set')", "", "set\n", sandbox.StatusOK, ""},
				{"x + 1", "42", "", sandbox.StatusOK, ""},
				{"import sys\nprint('out'); print('err', file=sys.stderr)\nopen('made.txt', 'w').write('by the cell')\nopen('in/data.txt').read()", "'given'", "out\n", sandbox.StatusOK, "made.txt"},
				{"y = 1\nraise ValueError('bad')", "", "", sandbox.StatusError, ""},
				{"import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nopen('made.txt', 'a').write('!')\nx, y", "(41, 1)", "", sandbox.StatusOK, "figure-1.png made.txt"},
				{"import pandas as pd\npd.DataFrame({'a': [1, 2]})", "   a\n0  1\n1  2", "", sandbox.StatusOK, ""},
			} {
				start := time.Now()
				res, err := ses.Exec(ctx, sandbox.Cell{Code: tc.code})
				t.Logf("cell %q in %s: %s value %q stdout %q stderr %q reason %q", tc.code, time.Since(start).Round(time.Millisecond), res.Status, res.Value, res.Stdout, res.Stderr, res.Reason)
				if err != nil {
					t.Fatalf("Exec: %v", err)
				}
				if res.Status != tc.status || res.Value != tc.value || string(res.Stdout) != tc.stdout {
					t.Errorf("cell %q: status %s value %q stdout %q, want %s %q %q", tc.code, res.Status, res.Value, res.Stdout, tc.status, tc.value, tc.stdout)
				}
				var arts []string
				for _, a := range res.Artifacts {
					arts = append(arts, a.Name)
					if a.Name == "figure-1.png" && (a.MIME != "image/png" || !bytes.HasPrefix(a.Content, []byte("\x89PNG"))) {
						t.Errorf("figure-1.png: MIME %q, content %d bytes, want a PNG", a.MIME, len(a.Content))
					}
				}
				if strings.Join(arts, " ") != tc.artifacts {
					t.Errorf("cell %q: artifacts %v, want %q (the files it made or changed, its figures)", tc.code, arts, tc.artifacts)
				}
				if strings.Contains(tc.code, "DataFrame") && !strings.Contains(res.ValueHTML, "<table") {
					t.Errorf("a DataFrame's HTML %q, want a table", res.ValueHTML)
				}
				if tc.status == sandbox.StatusError && (res.Error == nil || res.Error.Type != "ValueError" || res.Error.Line != 2) {
					t.Errorf("error %+v, want ValueError at line 2", res.Error)
				}
			}
			got, err := ses.ReadFile(ctx, "made.txt")
			if err != nil || string(got) != "by the cell!" {
				t.Errorf("ReadFile(made.txt) = %q, %v", got, err)
			}
			if err := ses.WriteFile(ctx, "sub/host.txt", []byte("from the host")); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			res, err := ses.Exec(ctx, sandbox.Cell{Code: "import os\nopen('sub/host.txt').read(), os.stat('sub').st_uid == os.getuid()"})
			if err != nil || res.Value != "('from the host', True)" || len(res.Artifacts) != 0 {
				t.Errorf("the cell reads the host's file: %v %s %q, artifacts %d (want none)", err, res.Status, res.Value, len(res.Artifacts))
			}
			files, err := ses.ListFiles(ctx)
			if err != nil {
				t.Fatalf("ListFiles: %v", err)
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
			}
			if strings.Join(names, " ") != "in in/data.txt made.txt sub sub/host.txt" {
				t.Errorf("ListFiles: %v", names)
			}
		})
	}
}

// TestSessionOOM runs a cell that exhausts the session's memory: under
// docker the cell ends as memory_limit, the interpreter restarted with the
// files kept; under gVisor (see notApplicableFor) as memory_limit with the
// session closed, the next cell refused.
func TestSessionOOM(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			rt := newRuntime(t, r.oci)
			defer rt.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			ses, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python, Limits: sandbox.Limits{MemoryBytes: 128 * sandbox.MiB}})
			if err != nil {
				t.Fatalf("NewSession: %v", err)
			}
			defer ses.Close()
			if res, err := ses.Exec(ctx, sandbox.Cell{Code: "x = 1\nopen('kept.txt', 'w').write('yes')"}); err != nil || res.Status != sandbox.StatusOK {
				t.Fatalf("first cell: %v %s %s", err, res.Status, res.Reason)
			}
			res, err := ses.Exec(ctx, sandbox.Cell{Code: "b = bytearray()\nwhile True:\n    b += bytes(1 << 20)", TimeoutMS: 60_000})
			t.Logf("the memory bomb: %s restarted %v reason %q", res.Status, res.Restarted, res.Reason)
			if err != nil || res.Status != sandbox.StatusMemoryLimit {
				t.Fatalf("the memory bomb: %v %s, want memory_limit", err, res.Status)
			}
			next, err := ses.Exec(ctx, sandbox.Cell{Code: "'x' in globals(), open('kept.txt').read()"})
			switch r.oci {
			case docker.GVisorRuntime:
				if res.Restarted || !errors.Is(err, sandbox.ErrSessionClosed) {
					t.Errorf("under gVisor: restarted %v, the next cell %v %s; want no restart and the session closed", res.Restarted, err, next.Status)
				}
			default:
				if !res.Restarted || err != nil || next.Value != "(False, 'yes')" {
					t.Errorf("restarted %v, the next cell %v %s %q; want a fresh interpreter with the files kept", res.Restarted, err, next.Status, next.Value)
				}
			}
		})
	}
}

// TestSessionCloseLeavesNothing starts a session whose cell leaves a busy
// child behind, closes it while the container is paused, and checks from
// the host that nothing of it remains: the container, its volumes, their
// mounts, its processes.
func TestSessionCloseLeavesNothing(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			rt := newRuntime(t, r.oci)
			defer rt.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			ses, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
			if err != nil {
				t.Fatalf("NewSession: %v", err)
			}
			defer ses.Close()
			token := "crucible-close-" + ses.ID()
			res, err := ses.Exec(ctx, sandbox.Cell{Code: "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'while True: pass', '" + token + "'])\nopen('f.txt', 'w').write('x')"})
			if err != nil || res.Status != sandbox.StatusOK {
				t.Fatalf("the cell: %v %s %s", err, res.Status, res.Reason)
			}
			cli, err := docker.Connect(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.SessionLabel+"="+ses.ID()))})
			if err != nil || len(list) != 1 {
				t.Fatalf("the session's container: %v, %d found, want 1", err, len(list))
			}
			ins, err := cli.ContainerInspect(ctx, list[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			var volumes []string
			for _, m := range ins.Mounts {
				if m.Type == mount.TypeVolume {
					volumes = append(volumes, m.Name)
				}
			}
			if len(volumes) != 2 {
				t.Fatalf("the session's volumes: %v, want /work's and /code's", volumes)
			}
			hostPid := ins.State.Pid
			if r.oci == docker.RuncRuntime && len(processesWith(token)) == 0 {
				t.Fatalf("positive control: the busy child %s is not seen on the host", token)
			}
			if len(processesWith(list[0].ID)) == 0 {
				t.Fatalf("positive control: no host process (the shim, runsc's sandbox) names the container %s", list[0].ID)
			}
			time.Sleep(200 * time.Millisecond) // the container is paused by now
			if ins, err := cli.ContainerInspect(ctx, list[0].ID); err != nil || !ins.State.Paused {
				t.Errorf("between cells the container is not paused: %v", err)
			}
			if err := ses.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, err := cli.ContainerInspect(ctx, list[0].ID); !cerrdefs.IsNotFound(err) {
				t.Errorf("after Close the container remains: %v", err)
			}
			for _, v := range volumes {
				if _, err := cli.VolumeInspect(ctx, v); !cerrdefs.IsNotFound(err) {
					t.Errorf("after Close the volume %s remains: %v", v, err)
				}
			}
			mounts, err := os.ReadFile("/proc/self/mountinfo")
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range append(volumes, list[0].ID) {
				if strings.Contains(string(mounts), id) {
					t.Errorf("after Close a mount of %s remains", id)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) && (processExists(hostPid) || len(processesWith(token)) > 0 || len(processesWith(list[0].ID)) > 0) {
				time.Sleep(50 * time.Millisecond)
			}
			if processExists(hostPid) {
				t.Errorf("after Close the container's process %d lives", hostPid)
			}
			for _, p := range processesWith(list[0].ID) {
				t.Errorf("after Close a host process of the container lives: %s", p)
			}
			for _, p := range processesWith(token) {
				t.Errorf("after Close the session's busy child lives: %s", p)
			}
			if _, err := ses.Exec(ctx, sandbox.Cell{Code: "1"}); !errors.Is(err, sandbox.ErrSessionClosed) {
				t.Errorf("a cell after Close: %v, want ErrSessionClosed", err)
			}
		})
	}
}

// processesWith returns the host's processes whose command line holds s.
func processesWith(s string) []string {
	var found []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			found = append(found, d.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// processExists reports whether the host has a process pid.
func processExists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return pid > 0 && err == nil
}

// TestSessionLimits runs cells stopped at each limit through each runtime,
// with the native sessions' statuses and outcomes: a cell interrupted at
// its wall-time, CPU-time or output limit leaves the session (and its
// variables) as they were; a cell that ignores the interrupt, or kills the
// interpreter, ends the session. A busy cell's CPU time is its metric.
func TestSessionLimits(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			rt := newRuntime(t, r.oci)
			defer rt.Close()
			for _, tc := range []struct {
				name   string
				lim    sandbox.Limits
				cell   sandbox.Cell
				status sandbox.Status
				kept   bool // the session lives on, its variables kept
			}{
				{"busy", sandbox.Limits{}, sandbox.Cell{Code: "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"}, sandbox.StatusOK, true},
				{"timeout", sandbox.Limits{}, sandbox.Cell{Code: "while True: pass", TimeoutMS: 1000}, sandbox.StatusTimeout, true},
				{"cpu", sandbox.Limits{CPUTimeMS: 1000}, sandbox.Cell{Code: "while True: pass", TimeoutMS: 30_000}, sandbox.StatusCPULimit, true},
				{"output", sandbox.Limits{OutputBytes: 10_000}, sandbox.Cell{Code: "while True: print('x' * 1000)"}, sandbox.StatusOutputLimit, true},
				{"deaf", sandbox.Limits{}, sandbox.Cell{Code: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", TimeoutMS: 1000}, sandbox.StatusTimeout, false},
				{"suicide", sandbox.Limits{}, sandbox.Cell{Code: "import os\nos.kill(os.getpid(), 9)"}, sandbox.StatusKilled, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					ses, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python, Limits: tc.lim})
					if err != nil {
						t.Fatalf("NewSession: %v", err)
					}
					defer ses.Close()
					if res, err := ses.Exec(ctx, sandbox.Cell{Code: "v = 7"}); err != nil || res.Status != sandbox.StatusOK {
						t.Fatalf("first cell: %v %s", err, res.Status)
					}
					start := time.Now()
					res, err := ses.Exec(ctx, tc.cell)
					t.Logf("%s in %s: %s reason %q signal %q stdout %d bytes, cpu %.0fms", tc.name, time.Since(start).Round(time.Millisecond), res.Status, res.Reason, res.Signal, len(res.Stdout), res.Metrics.CPUMS)
					if err != nil || res.Status != tc.status {
						t.Fatalf("%v %s, want %s", err, res.Status, tc.status)
					}
					switch tc.name {
					case "busy":
						// gVisor's clocks inside the sandbox count a loaded
						// host's waits as the task's: the host's count
						// (the metric) may be half of it.
						if res.Metrics.CPUMS < 200 {
							t.Errorf("a cell busy for 0.5s of CPU (as it counts) was billed %.0fms", res.Metrics.CPUMS)
						}
					case "output":
						if len(res.Stdout) != 10_000 || !res.StdoutTruncated {
							t.Errorf("stdout %d bytes (truncated %v), want 10000, truncated", len(res.Stdout), res.StdoutTruncated)
						}
					}
					next, err := ses.Exec(ctx, sandbox.Cell{Code: "v"})
					if tc.kept && (err != nil || next.Value != "7") {
						t.Errorf("the next cell: %v %s %q, want the session kept with v = 7", err, next.Status, next.Value)
					}
					if !tc.kept && !errors.Is(err, sandbox.ErrSessionClosed) {
						t.Errorf("the next cell: %v %s, want ErrSessionClosed", err, next.Status)
					}
				})
			}
		})
	}
}
