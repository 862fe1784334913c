package sandboxtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

const hex64 = "576e03f62ba587de4b629594dd50ee06e2c4ff6f097ec6220575a9d452fc9ede"

func TestEngineMount(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		engine     bool
	}{
		{"container root", "46 42 0:39 / /var/lib/docker/overlay2/" + hex64 + "/merged rw,relatime shared:2 - overlay overlay rw,lowerdir=/x", true},
		{"volume tmpfs", "47 42 0:41 / /var/lib/docker/volumes/" + hex64 + "/_data rw,relatime shared:3 - tmpfs tmpfs rw", true},
		{"named volume", "47 42 0:41 / /var/lib/docker/volumes/crucible-kernelview/_data rw - tmpfs tmpfs rw", true},
		{"container shm", "48 42 0:42 / /var/lib/docker/containers/" + hex64 + "/mounts/shm rw - tmpfs shm rw", true},
		{"network namespace", "63 27 0:4 net:[4026532327] /run/docker/netns/94234b56636f rw - nsfs nsfs rw", true},
		{"inside a container's root", "43 133 0:66 / /var/lib/docker/overlay2/" + hex64 + "/merged/work rw - tmpfs tmpfs rw", true},
		{"containerd task root", "50 42 0:43 / /run/containerd/io.containerd.runtime.v2.task/moby/" + hex64 + "/rootfs rw - overlay overlay rw", true},
		// Not the engine's: wrong type at an engine path, engine-like
		// paths elsewhere, the native runtime's own mounts.
		{"tmpfs at a root's path", "46 42 0:39 / /var/lib/docker/overlay2/" + hex64 + "/merged rw - tmpfs tmpfs rw", false},
		{"tmpfs at a netns path", "63 27 0:4 / /run/docker/netns/94234b56636f rw - tmpfs tmpfs rw", false},
		{"overlay outside docker", "46 42 0:39 / /tmp/var/lib/docker/overlay2/" + hex64 + "/merged rw - overlay overlay rw", false},
		{"docker's root itself", "46 42 0:39 / /var/lib/docker rw - ext4 /dev/vda rw", false},
		{"a volume's subdirectory", "47 42 0:41 / /var/lib/docker/volumes/x/_data/sub rw - tmpfs tmpfs rw", false},
		{"a sandbox staging mount", "90 27 0:50 / /tmp/crucible-123/root rw - tmpfs tmpfs rw", false},
		{"short line", "46 42 0:39 /", false},
	} {
		if got := EngineMount(tc.line); got != tc.engine {
			t.Errorf("%s: EngineMount = %v, want %v", tc.name, got, tc.engine)
		}
	}
}

// TestHostCheckBesideDocker runs the native runtime's checked run (host
// snapshot, run, host check) while Docker creates, starts and removes
// containers without pause: the check passes, though the host's mount
// table changed under it (the positive control: the engine's mounts came
// and went during the run), and a mount of ours made in the same window
// is still reported (the negative control).
func TestHostCheckBesideDocker(t *testing.T) {
	testenv.Root(t)
	testenv.Docker(t)
	img := testenv.Image(t, "datascience")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := docker.Connect(ctx, "")
	if err != nil {
		testenv.DockerUnavailable(t, err)
	}
	defer cli.Close()
	ref, err := docker.ImportImage(ctx, cli, img.Name, img.Digest, img.RootFS)
	if err != nil {
		t.Fatalf("import the datascience image into Docker: %v", err)
	}
	rt, err := linux.New(linux.Options{})
	if err != nil {
		t.Fatalf("linux.New: %v", err)
	}
	s := &suite{rt: rt, owner: os.Getpid()}
	t.Cleanup(func() { s.finalCheck(t) })

	// Docker's churn: one container at a time, with a tmpfs volume, each
	// started and removed.
	var cycles, engineSeen atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	churnErr := make(chan error, 1)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := cli.ContainerCreate(ctx, &container.Config{Image: ref, Cmd: []string{"sleep", "30"}, NetworkDisabled: true},
				&container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Target: "/work",
					VolumeOptions: &mount.VolumeOptions{DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{"type": "tmpfs", "device": "tmpfs"}}}}}},
				nil, nil, "")
			if err == nil {
				err = cli.ContainerStart(ctx, c.ID, container.StartOptions{})
				if err == nil && countEngineMounts() > 0 {
					engineSeen.Add(1)
				}
				if rerr := cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err == nil {
					err = rerr
				}
			}
			if err != nil {
				churnErr <- err
				return
			}
			cycles.Add(1)
		}
	})
	defer func() { close(stop); wg.Wait() }()
	for cycles.Load() == 0 && len(churnErr) == 0 {
		time.Sleep(20 * time.Millisecond)
	}

	before := cycles.Load()
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: "import time\ntime.sleep(2)\nprint('done')"}, watch{token: newToken()})
	during := cycles.Load() - before
	wantExit(t, res, sandbox.StatusOK, 0)
	select {
	case err := <-churnErr:
		t.Fatalf("Docker's containers: %v", err)
	default:
	}
	t.Logf("%d containers were started and removed during the checked run", during)
	if during < 1 || engineSeen.Load() == 0 {
		t.Fatalf("the positive control failed: %d containers during the run, engine mounts seen %d times", during, engineSeen.Load())
	}

	// The negative control: a mount of ours in the same window shows.
	snap := mountTable(t)
	dir := filepath.Join(t.TempDir(), "leak")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	added, _ := diffLines(mountTable(t), snap)
	found := false
	for _, l := range added {
		found = found || strings.Contains(l, dir)
	}
	if !found {
		t.Errorf("a tmpfs mounted at %s while Docker churned is not reported: added %v", dir, added)
	}
}

// countEngineMounts counts the engine's mounts in the host's mount table.
func countEngineMounts() int {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if EngineMount(l) {
			n++
		}
	}
	return n
}
