package docker_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/crucible-sandbox/crucible/policy/egress"
	"github.com/crucible-sandbox/crucible/policy/egress/egresstest"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// newPooledRuntime returns a runtime of oci keeping prestart containers
// ready, and a client of the daemon for the host's checks.
func newPooledRuntime(t testing.TB, oci string, prestart int) (*docker.Runtime, *client.Client) {
	t.Helper()
	newRuntime(t, oci).Close() // imports the image; stops t without a daemon
	rt, err := docker.New(context.Background(), docker.Options{Image: imported.ref, ImageDigest: imported.dig, OCIRuntime: oci, Prestart: prestart})
	if err != nil {
		t.Fatalf("docker.New with Prestart %d: %v", prestart, err)
	}
	cli, err := docker.Connect(context.Background(), "")
	if err != nil {
		rt.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return rt, cli
}

// waitReady waits until rt's pool holds n ready containers.
func waitReady(t testing.TB, rt *docker.Runtime, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for rt.PoolReady() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the pool holds %d ready containers after a minute, want %d", rt.PoolReady(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// poolContainers lists, from the daemon, the containers this process's
// pools made, running or not.
func poolContainers(t testing.TB, cli *client.Client) []container.Summary {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", docker.PoolLabel+"="+docker.PoolOwner))})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func ids(list []container.Summary) []string {
	var out []string
	for _, c := range list {
		out = append(out, c.ID)
	}
	slices.Sort(out)
	return out
}

// TestPooledRun runs the same requests in pooled containers and in cold
// ones and compares the Results; each pooled container serves one run,
// is removed after it and replaced; a request whose limits differ from
// the pool's takes the cold path and leaves the pool's container ready.
func TestPooledRun(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			cold := newRuntime(t, r.oci)
			defer cold.Close()
			rt, cli := newPooledRuntime(t, r.oci, 1)
			defer rt.Close()
			for _, tc := range []struct {
				name string
				req  sandbox.Request
			}{
				{"print", sandbox.Request{Language: sandbox.Python, Code: "print(1)"}},
				{"stdin", sandbox.Request{Language: sandbox.Python, Code: "import sys; print(sys.stdin.read().upper())", Stdin: sandbox.Data("abc")}},
				{"files", sandbox.Request{Language: sandbox.Bash, Code: "id -u >/dev/null; cat d/in.txt; echo out > out.txt; ls /tmp /work",
					Files: []sandbox.File{{Name: "d/in.txt", Content: sandbox.Data("hello\n")}}}},
				{"error", sandbox.Request{Language: sandbox.Python, Code: "x = 1\nraise ValueError('bad')"}},
				{"large program", sandbox.Request{Language: sandbox.Python, Code: "# " + strings.Repeat("x", 40000) + "\nprint(len(open(__file__).read()))"}},
				{"unicode", sandbox.Request{Language: sandbox.Python, Code: "print('h\u00e9llo \u2713', '\\\\n', '%s')"}},
				{"read-only input", sandbox.Request{Language: sandbox.Bash, Code: "stat -c '%a %n' in/a.txt b.txt; [ -O b.txt ] && echo b mine; [ -O in/a.txt ] || echo a not mine; echo more >> b.txt; rm -f in/a.txt; cat in/a.txt",
					Files: []sandbox.File{{Name: "in/a.txt", Content: sandbox.Data("ro\n"), ReadOnly: true}, {Name: "b.txt", Content: sandbox.Data("rw\n")}}}},
				{"environment", sandbox.Request{Language: sandbox.Python, Code: "import os, sys; print(sorted(os.environ.items()), os.getcwd(), sys.argv)", Env: map[string]string{"A": "1 2", "B": "x\ny"}}},
				{"large stdin", sandbox.Request{Language: sandbox.Python, Code: "import sys; d = sys.stdin.buffer.read(); print(len(d), d[:5], d[-5:])", Stdin: sandbox.Data(strings.Repeat("0123456789", 30000))}},
				{"kill everything", sandbox.Request{Language: sandbox.Bash, Code: "echo before; kill -9 -1; echo after"}},
				{"leftover", sandbox.Request{Language: sandbox.Bash, Code: "echo kept > /tmp/left; (sleep 1000 &) ; ls /tmp"}},
				{"timeout", sandbox.Request{Language: sandbox.Python, Code: "while True: pass", Limits: sandbox.Limits{WallTimeMS: 1000}}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					want, err := cold.Run(ctx, tc.req)
					if err != nil {
						t.Fatalf("cold Run: %v", err)
					}
					waitReady(t, rt, 1)
					before := ids(poolContainers(t, cli))
					if len(before) != 1 {
						t.Fatalf("pooled containers before the run: %v, want one", before)
					}
					got, err := rt.Run(ctx, tc.req)
					if err != nil {
						t.Fatalf("pooled Run: %v", err)
					}
					t.Logf("pooled: %s exit %d stdout %q stderr %q artifacts %d", got.Status, got.ExitCode, clip(got.Stdout), clip(got.Stderr), len(got.Artifacts))
					// Nothing of the run runs once Run has returned: the
					// launcher killed what the program left, or the container
					// was stopped.
					if ins, err := cli.ContainerInspect(ctx, before[0]); err == nil && ins.State.Running && tc.name == "leftover" {
						top, err := cli.ContainerTop(ctx, before[0], nil)
						if err != nil {
							// Under gVisor, runsc cannot list a sandbox the
							// pool is removing: then it must be gone soon.
							for deadline := time.Now().Add(10 * time.Second); err != nil && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
								if ins, ierr := cli.ContainerInspect(ctx, before[0]); ierr != nil || !ins.State.Running {
									err = nil
								}
							}
							if err != nil {
								t.Fatalf("the processes of the container that served the run: %v", err)
							}
						}
						for _, p := range top.Processes {
							if strings.Contains(strings.Join(p, " "), "sleep 1000") {
								t.Errorf("what the program left still runs when Run returns: %q", p)
							}
						}
					}
					if got.Status == sandbox.StatusInternal {
						t.Errorf("pooled run: status %s (%s)", got.Status, got.Reason)
					}
					if r.oci == docker.GVisorRuntime && tc.name == "kill everything" {
						// kill(-1, SIGKILL) also kills the output relay's cats
						// (gvisor_relay.go): what the program wrote before may
						// or may not be out, cold or pooled alike.
						want.Stdout, want.Stderr = got.Stdout, got.Stderr
					}
					if got.Status != want.Status || string(got.Stdout) != string(want.Stdout) || string(got.Stderr) != string(want.Stderr) ||
						got.ExitCode != want.ExitCode || got.Signal != want.Signal || got.Reason != want.Reason || got.ImageDigest != want.ImageDigest ||
						!slices.EqualFunc(got.Artifacts, want.Artifacts, func(a, b sandbox.Artifact) bool { return a.Name == b.Name && string(a.Content) == string(b.Content) }) ||
						(got.Error == nil) != (want.Error == nil) || (got.Error != nil && *got.Error != *want.Error) {
						t.Errorf("pooled result differs from the cold one:\npooled: %s %q %q exit %d %q %q %+v %v\ncold:   %s %q %q exit %d %q %q %+v %v",
							got.Status, got.Stdout, got.Stderr, got.ExitCode, got.Signal, got.Reason, got.Artifacts, got.Error,
							want.Status, want.Stdout, want.Stderr, want.ExitCode, want.Signal, want.Reason, want.Artifacts, want.Error)
					}
					// The container that served the run is removed and a new
					// one takes its place.
					waitReady(t, rt, 1)
					deadline := time.Now().Add(30 * time.Second)
					for {
						after := ids(poolContainers(t, cli))
						if len(after) == 1 && after[0] != before[0] {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("pooled containers %v after the run, want one that is not %s (removed after its run)", after, before[0])
						}
						time.Sleep(10 * time.Millisecond)
					}
					if _, err := cli.ContainerInspect(ctx, before[0]); !cerrdefs.IsNotFound(err) {
						t.Errorf("the container that served the run: inspect says %v, want not found", err)
					}
				})
			}
			t.Run("other limits", func(t *testing.T) {
				waitReady(t, rt, 1)
				before := ids(poolContainers(t, cli))
				res, err := rt.Run(context.Background(), sandbox.Request{Language: sandbox.Python, Code: "print(2)", Limits: sandbox.Limits{DiskBytes: 8 << 20}})
				if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "2\n" {
					t.Fatalf("Run: %v, %s %q", err, res.Status, res.Stdout)
				}
				if after := ids(poolContainers(t, cli)); !slices.Equal(after, before) || rt.PoolReady() != 1 {
					t.Errorf("pooled containers %v (%d ready) after a run of other limits, want %v ready: such a run takes the cold path", after, rt.PoolReady(), before)
				}
			})
		})
	}
}

// TestPoolDeadContainer kills a ready container from the host, as a
// daemon's restart would: the run that takes it makes a container of its
// own instead and succeeds.
func TestPoolDeadContainer(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			rt, cli := newPooledRuntime(t, r.oci, 1)
			defer rt.Close()
			waitReady(t, rt, 1)
			ready := ids(poolContainers(t, cli))
			if len(ready) != 1 {
				t.Fatalf("pooled containers %v, want one", ready)
			}
			ctx := context.Background()
			if err := cli.ContainerKill(ctx, ready[0], "KILL"); err != nil {
				t.Fatal(err)
			}
			res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: "print(1)"})
			if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "1\n" {
				t.Fatalf("Run after the ready container died: %v, %s %q (%s)", err, res.Status, res.Stdout, res.Reason)
			}
			waitReady(t, rt, 1)
		})
	}
}

// TestPoolClose checks from the host that Close removes every container
// of the pool, ready or used, with its volumes and their tmpfs mounts.
func TestPoolClose(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			rt, cli := newPooledRuntime(t, r.oci, 2)
			waitReady(t, rt, 2)
			res, err := rt.Run(context.Background(), sandbox.Request{Language: sandbox.Bash, Code: "echo x > /work/f; sleep 1000 & echo started"})
			if err != nil || res.Status != sandbox.StatusOK {
				t.Fatalf("Run: %v, %s", err, res.Status)
			}
			waitReady(t, rt, 2)
			var volumes []string
			for _, c := range poolContainers(t, cli) {
				for _, m := range c.Mounts {
					if m.Type == "volume" {
						volumes = append(volumes, m.Name)
					}
				}
			}
			if len(volumes) < 4 {
				t.Fatalf("volumes of the pool's containers: %v, want two (/work, /code) for each of at least two", volumes)
			}
			if err := rt.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if left := poolContainers(t, cli); len(left) != 0 {
				t.Errorf("containers of the pool after Close: %v", ids(left))
			}
			mounts, err := os.ReadFile("/proc/mounts")
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range volumes {
				if _, err := cli.VolumeInspect(context.Background(), v); !cerrdefs.IsNotFound(err) {
					t.Errorf("volume %s after Close: inspect says %v, want not found", v, err)
				}
				if strings.Contains(string(mounts), v) {
					t.Errorf("volume %s is still mounted after Close", v)
				}
			}
		})
	}
}

// TestSweepPools leaves a pooled container of a process that has ended,
// as a crash would, and one of this process: the sweep removes the first
// alone.
func TestSweepPools(t *testing.T) {
	rt, cli := newPooledRuntime(t, docker.RuncRuntime, 1)
	defer rt.Close()
	waitReady(t, rt, 1)
	ctx := context.Background()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	// A pid no process has (above pid_max's largest value), this boot.
	dead := strings.TrimSpace(string(boot)) + "/4194305/1"
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: imported.ref, Cmd: []string{"true"}, Labels: map[string]string{docker.PoolLabel: dead}}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	ours := ids(poolContainers(t, cli))
	n, err := docker.SweepPools(ctx, cli)
	if err != nil {
		t.Fatalf("SweepPools: %v", err)
	}
	if _, err := cli.ContainerInspect(ctx, c.ID); !cerrdefs.IsNotFound(err) {
		t.Errorf("the dead owner's container after the sweep: inspect says %v, want not found", err)
	}
	if n < 1 {
		t.Errorf("SweepPools removed %d containers, want at least the dead owner's", n)
	}
	if now := ids(poolContainers(t, cli)); !slices.Equal(now, ours) {
		t.Errorf("this process's pooled containers %v after the sweep, want %v kept", now, ours)
	}
}

// TestPrestartNegative: a negative Prestart is refused, naming the field.
func TestPrestartNegative(t *testing.T) {
	_, err := docker.New(context.Background(), docker.Options{Image: "x", Prestart: -1})
	if err == nil || !strings.Contains(err.Error(), "Prestart") {
		t.Fatalf("New with Prestart -1: %v, want an error naming Prestart", err)
	}
}

// TestEgressPooled: a run with an allowlist in a pooled container (the
// proxy's listener opened in the ready container's namespace, its
// variables given to the launcher) reaches what it allows and nothing
// else, as a cold run's.
func TestEgressPooled(t *testing.T) {
	probe := egresstest.NewProbe(t, "198.51.100.8/30")
	newRuntime(t, docker.RuncRuntime).Close()
	rt, err := docker.New(context.Background(), docker.Options{Image: imported.ref, ImageDigest: imported.dig, Egress: egress.Config{Resolver: probe.DNS.Resolver()}, Prestart: 1})
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	defer rt.Close()
	cli, err := docker.Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	waitReady(t, rt, 1)
	ready := ids(poolContainers(t, cli))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := rt.Run(ctx, probe.Request())
	if err != nil {
		t.Fatalf("Run: %v (%s: %s)", err, res.Status, res.Reason)
	}
	probe.Check(t, res)
	waitGone(t, cli, ready[0])
}

// waitGone waits until container id is removed (in the background, after
// the run it served).
func waitGone(t testing.TB, cli *client.Client, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := cli.ContainerInspect(context.Background(), id)
		if cerrdefs.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s: inspect says %v 30 s after its run, want removed", id, err)
		}
	}
}
